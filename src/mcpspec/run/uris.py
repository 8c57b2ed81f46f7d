"""Which resource URIs a request may name: the request-time half of what resource listings hide.

A listing hides a resource or template (not pinned, changed since the lock, a tool-poisoning
finding); a client that knows or guesses its URI must not get it by asking. What a server does with
a URI is its own business (it may fold case, decode percent-escapes, resolve ``..``, ignore a
trailing slash or a query), so the rule allows only on certainty and refuses on a possibility:

- allowed by a resource: the URI exactly as a listing showed it;
- allowed by a template: the URI matches a shown template and is plain (:func:`plain`);
- refused: a URI whose key (:func:`keys`) equals a hidden resource's, or one that matches a hidden
  template in any reading (:func:`readings`) without being allowed by a shown one;
- with a lock, anything else is refused too: only what the lock pins may be read;
- a URI longer than ``MAX_URI_CHARS`` is refused unless a listing showed it exactly.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

from mcpspec.conditions.paths import spellings
from mcpspec.conditions.saferegex import MAX_VALUE_CHARS, RegexRefused, SafeRegex

MAX_URI_CHARS = MAX_VALUE_CHARS  # longer: judged by no template (unknown)
_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^{}]*\}")
_ENCODED_SPECIAL = re.compile(r"%(?:2[eEfF5]|5[cC]|00)")  # ``.``, ``/``, ``%`` (twice encoded), ``\``, NUL
_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


UNJUDGED = "\x00unjudged"  # the key of a URI with more readings than are judged: it may be any hidden one


def readings(uri: str) -> set[str]:
    """``uri`` and every string reached from it by NFKC folding, percent-decoding (repeatedly) and reading
    backslashes as slashes, each as written and casefolded; with more than the readings judged
    (:data:`mcpspec.conditions.paths.MAX_READINGS`), also UNJUDGED."""
    forms, cut = spellings(uri)
    return forms | {form.casefold() for form in forms} | ({UNJUDGED} if cut else set())


def _resolved(form: str) -> str:
    """``form`` with empty and ``.`` segments dropped and ``..`` resolved, after its scheme."""
    scheme, colon, rest = form.partition(":")
    if not colon:
        scheme, rest = "", form
    stack: list[str] = []
    for part in rest.split("/"):
        if part == "..":
            if stack:
                stack.pop()
        elif part not in ("", "."):
            stack.append(part)
    return f"{scheme}:{'/'.join(stack)}"


@functools.lru_cache(maxsize=4096)
def keys(uri: str) -> frozenset[str]:
    """What a server may take ``uri`` for: each reading, casefolded, its dot segments resolved, repeated
    and trailing slashes dropped; each also without its query and fragment."""
    found: set[str] = set()
    for form in readings(uri[:MAX_URI_CHARS]):
        if form == UNJUDGED:
            found.add(UNJUDGED)
            continue
        folded = form.casefold()
        found.add(_resolved(folded))
        found.add(_resolved(re.split(r"[?#]", folded, maxsplit=1)[0]))
    return frozenset(found)


def plain(uri: str) -> bool:
    """Whether a server can read ``uri`` only one way: no control character, space or backslash, in NFKC
    form, no escaped ``.``/``/``/``\\``/``%``/NUL nor a stray ``%``, no ``.`` or ``..`` segment, and
    percent-escapes that decode as UTF-8."""
    if not uri or len(uri) > MAX_URI_CHARS or any(ord(char) <= 0x20 or ord(char) == 0x7F for char in uri) or "\\" in uri:
        return False
    if unicodedata.normalize("NFKC", uri) != uri or _ENCODED_SPECIAL.search(uri) or _ESCAPE.search(uri):
        return False
    try:
        unquote(uri, errors="strict")
    except UnicodeDecodeError:
        return False
    path = re.split(r"[?#]", uri, maxsplit=1)[0]
    return not any(part in (".", "..") for part in path.split("/"))


@functools.lru_cache(maxsize=1024)
def template_pattern(template: str, casefold: bool = False) -> SafeRegex | None:
    """An RFC 6570 template as a regular expression over URIs, run in linear time (a server chooses its
    templates: ``{+a}x{+b}y{+c}`` must not make a long URI cost minutes): a simple ``{var}`` matches one
    segment's worth (no ``/``, ``?`` or ``#``), every other expression anything; None when the pattern
    is too large to run so (a template that cannot be judged)."""
    template = template.casefold() if casefold else template
    parts: list[str] = []
    at = 0
    for found in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[at : found.start()]))
        parts.append("[^/?#]*" if found.group(1) == "" else ".*")
        at = found.end()
    parts.append(re.escape(template[at:]))
    try:
        return SafeRegex("".join(parts), dotall=True)
    except RegexRefused:
        return None


def _matches(template: str, uri: str, casefold: bool = False) -> bool | None:
    """Whether ``uri`` is under ``template``; None when that cannot be judged (a template or URI too large)."""
    pattern = template_pattern(template, casefold)
    return None if pattern is None else pattern.fullmatch(uri)


def allowed_by_template(uri: str, templates: Iterable[str]) -> str | None:
    """The shown template that allows ``uri`` (it matches as written, and ``uri`` is plain); None when none does."""
    if not plain(uri):
        return None
    return next((template for template in templates if _matches(template, uri) is True), None)


def hidden_resource(uri: str, hidden: Iterable[str]) -> str | None:
    """The hidden resource ``uri`` may be a spelling of; None when it is none of them."""
    mine = keys(uri)
    return next((other for other in sorted(hidden) if UNJUDGED in mine or mine & keys(other)), None)


def hidden_template(uri: str, hidden: Iterable[str]) -> str | None:
    """The hidden template ``uri`` matches in some reading (or spells, as a completion's reference); None when none."""
    forms = readings(uri[:MAX_URI_CHARS])
    mine = keys(uri)
    for template in sorted(hidden):
        if UNJUDGED in mine or mine & keys(template) or any(_matches(template, form.casefold(), casefold=True) is not False for form in forms):
            return template
    return None
