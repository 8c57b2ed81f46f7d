"""The poisoning checks of everything one server offers: every string of every item (tools, prompts,
resources, resource templates, the `initialize` instructions), its names, its references to other
servers' tools, names that shadow a peer's, and annotations that contradict the spec's effects.

Pure functions of the offer and its context: nothing is fetched, resolved or sent anywhere.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcpspec.poisoning.detect import MAX_ITEM, instructions, scan_string
from mcpspec.poisoning.model import KEY_FIELD, Kind, PathPart, PoisonFinding, ServerContext, strings
from mcpspec.poisoning.text import fold, scripts, shown, skeleton, visible

# Scripts whose letters are drawn like Latin ones: mixed with Latin in one name, a homoglyph.
_LOOKALIKE_SCRIPTS = frozenset({"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "LISU", "GEORGIAN", "OLD", "MODIFIER"})
# Effects that write, run or send (TP010): a tool with any of them is not read-only.
_NOT_READ_ONLY = frozenset({"writes_local", "external_send", "exec", "deploy", "destructive", "modify_access", "financial", "exports_data"})
_PROSE = frozenset({"description", "title", "instructions"})  # the strings a model reads as text, read together too
_OPEN_WORLD = frozenset({"reads_untrusted", "external_send", "exports_data"})


def check_item(ctx: ServerContext, kind: Kind, item: Mapping[str, Any]) -> list[PoisonFinding]:
    """Every finding on one item (its JSON as the server listed it, key field included)."""
    key = str(item.get(KEY_FIELD[kind], "")) if kind != "initialize" else ""
    found: dict[tuple[str, tuple[PathPart, ...]], str] = {}

    def add(rule: str, path: tuple[PathPart, ...], message: str) -> None:
        found.setdefault((rule, path), message)

    for path, text, is_key in strings(item):
        for rule, message in scan_string(text, ctx, own_description=path == ("description",)):
            add(rule, path, message)
        if _is_name(kind, path, is_key):
            for message in _confusable(text):
                add("TP002", path, message)
        if not is_key:
            for message in _references(ctx, text):
                add("TP005", path, message)
    if not any(rule == "TP003" for rule, _ in found):  # an instruction split over several strings reads as one to the model
        prose = [text for path, text, is_key in strings(item) if not is_key and path and path[-1] in _PROSE]
        for rule, message in instructions(" ".join(prose)):
            add(rule, (), f"across its strings read together: {message}")
    size = len(json.dumps(item, ensure_ascii=False))
    if size > MAX_ITEM:
        add("TP008", (), f"the whole {kind[:-1] if kind != 'initialize' else 'answer'} is {size} characters as JSON (more than {MAX_ITEM})")
    if kind == "tools":
        for path, message in _shadowing(ctx, key):
            add("TP009", path, message)
        for path, message in _annotations(ctx, key, item.get("annotations")):
            add("TP010", path, message)
    return sorted(PoisonFinding(ctx.server, kind, key, path, rule, message) for (rule, path), message in found.items())


def check_offer(ctx: ServerContext, items: Mapping[Kind, Iterable[Mapping[str, Any]]], initialize: Mapping[str, Any] | None = None) -> list[PoisonFinding]:
    """Every finding on a server's whole offer: its items by kind, and its `initialize` pin."""
    findings = [finding for kind, listed in items.items() for item in listed for finding in check_item(ctx, kind, item)]
    if initialize:
        findings += check_item(ctx, "initialize", initialize)
    return sorted(findings)


# --- TP002 names ---


def _is_name(kind: Kind, path: tuple[PathPart, ...], is_key: bool) -> bool:
    """The item's own name, a prompt argument's name, or a schema property's name."""
    if path == ("name",) and not is_key and kind in ("tools", "prompts", "resources", "resource_templates"):
        return True
    if len(path) == 3 and path[0] == "arguments" and path[2] == "name" and not is_key:
        return True
    return is_key and len(path) >= 2 and path[-2] == "properties"


def _confusable(name: str) -> Iterator[str]:
    clean = visible(name)
    if unicodedata.normalize("NFKC", clean) != clean:
        yield f"the name '{shown(name)}' has characters drawn like others (it reads '{shown(unicodedata.normalize('NFKC', clean))}')"
        return
    found = scripts(clean)
    if "LATIN" in found and found & _LOOKALIKE_SCRIPTS:
        yield f"the name '{shown(name)}' mixes Latin letters with {', '.join(sorted(found - {'LATIN'})).lower()} ones drawn alike"


# --- TP005 references to other servers' tools ---

_SEPARATOR = re.compile(r"(?<=[a-z0-9])[-.](?=[a-z0-9])")


def _name_form(text: str) -> str:
    """Casefolded, invisibles stripped, ``-`` and ``.`` inside a word as ``_``: how a name is found in text."""
    return _SEPARATOR.sub("_", unicodedata.normalize("NFKC", visible(text)).casefold())


def _distinctive(name: str) -> bool:
    """A name that is not an everyday word: it has a separator or inner capitals."""
    return bool(re.search(r"[-._]", name) or re.search(r"[a-z][A-Z]", name))


@dataclass(frozen=True)
class _References:
    """Every other server's tool names as a few compiled patterns (built once per context: a listing
    of a hundred tools against a spec of hundreds is checked in milliseconds)."""

    named: re.Pattern[str] | None  # distinctive names, found anywhere
    redirects: tuple[re.Pattern[str], ...]  # everyday names and server names, in a redirect
    owner: dict[str, str]  # a name's form -> what the message says it is


_REDIRECTS = (
    r"\b(?:instead of|rather than|in place of)(?: using| calling| invoking| the)* (?P<n>{names})\b",
    r"\b(?:when|whenever|before|after|once|if)(?: the)? (?P<n>{names})(?: tool| server)? (?:is|gets|has been|was|are) (?:called|used|invoked|run|executed|requested)\b",
    r"\b(?:when|whenever|before|after) (?:calling|using|invoking|running)(?: the)? (?P<n>{names})\b",
    r"\b(?:do not|dont|don t|never) (?:use|call|invoke)(?: the)? (?P<n>{names})\b",
)


def _references_of(ctx: ServerContext) -> _References:
    cached = ctx.__dict__.get("_references")
    if isinstance(cached, _References):
        return cached
    own = set(ctx.effects) | set(ctx.others.get(ctx.server, ()))
    owner: dict[str, str] = {}
    named: list[str] = []
    plain: list[str] = []
    for server, tools in sorted(ctx.others.items()):
        if server == ctx.server:
            continue
        for tool in sorted(tools - own):
            form = _name_form(tool) if _distinctive(tool) else fold(tool)
            if form and form not in owner:
                owner[form] = f"'{shown(tool)}', a tool of server '{shown(server)}'"
                (named if _distinctive(tool) else plain).append(form)
        form = fold(server)
        if form and form not in owner:
            owner[form] = f"server '{shown(server)}'"
            plain.append(form)

    def alternation(forms: list[str]) -> str:
        return "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))

    found = re.compile(rf"(?<![a-z0-9_])(?P<n>{alternation(named)})(?![a-z0-9_])") if named else None
    redirects = tuple(re.compile(pattern.format(names=alternation(plain))) for pattern in _REDIRECTS) if plain else ()
    index = _References(found, redirects, owner)
    ctx.__dict__["_references"] = index  # a cache on a frozen context: its inputs never change
    return index


def _references(ctx: ServerContext, text: str) -> Iterator[str]:
    index = _references_of(ctx)
    if index.named is not None:
        match = index.named.search(_name_form(text))
        if match:
            yield f"names {index.owner[match.group('n')]}"
            return
    folded = fold(text) if index.redirects else ""
    for pattern in index.redirects:
        match = pattern.search(folded)
        if match:
            yield f"steers the model away from or around {index.owner[match.group('n')]}"
            return


# --- TP009 shadowing ---


def _shadowing(ctx: ServerContext, name: str) -> Iterator[tuple[tuple[PathPart, ...], str]]:
    index = ctx.__dict__.get("_skeletons")
    if not isinstance(index, dict):  # skeleton -> (server, name) of every peer's tool, once per context
        index = {}
        for server in sorted(ctx.peers, reverse=True):
            for other in sorted(ctx.others.get(server, ()), reverse=True):
                index[skeleton(other)] = (server, other)
        ctx.__dict__["_skeletons"] = index
    clash = index.get(skeleton(name))
    if clash is not None:
        server, other = clash
        how = "the same name" if other == name else f"a name drawn alike ('{shown(other)}')"
        yield ("name",), f"server '{shown(server)}', in the same agent, offers a tool of {how}: the client may call either"


# --- TP010 annotations against the spec's effects ---


def _annotations(ctx: ServerContext, name: str, annotations: Any) -> Iterator[tuple[tuple[PathPart, ...], str]]:
    effects = set(ctx.effects.get(name, ()))
    if not isinstance(annotations, Mapping) or not effects:
        return
    writes = sorted(effects & _NOT_READ_ONLY)
    if annotations.get("readOnlyHint") is True and writes:
        yield ("annotations", "readOnlyHint"), f"says the tool only reads; the spec declares {', '.join(writes)}"
    if annotations.get("destructiveHint") is False and "destructive" in effects:
        yield ("annotations", "destructiveHint"), "says the tool destroys nothing; the spec declares destructive"
    open_world = sorted(effects & _OPEN_WORLD)
    if annotations.get("openWorldHint") is False and open_world:
        yield ("annotations", "openWorldHint"), f"says the tool touches no outside world; the spec declares {', '.join(open_world)}"

