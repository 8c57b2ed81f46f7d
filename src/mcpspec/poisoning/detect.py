"""The checks on one string a server wrote: each yields (rule id, message).

Every phrase is matched on normalised text (:mod:`mcpspec.poisoning.text`), so spacing, case,
fullwidth or look-alike letters and invisible characters do not hide it.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import unicodedata
from collections.abc import Iterator
from urllib.parse import urlsplit

from mcpspec.poisoning.model import ServerContext
from mcpspec.poisoning.text import fold, invisible_at, is_invisible, shown, squeezed, tag_payload, visible
from mcpspec.spec.values import Destination

# Thresholds of TP008 (docs/rules/TP008 and docs/lock.md say them).
MAX_DESCRIPTION = 2048  # characters of an item's own description
MAX_STRING = 1024  # characters of any other string
MAX_ITEM = 16384  # characters of the whole item as JSON
MAX_BLANK_LINES = 8  # blank lines in a row
MAX_SPACES = 64  # spaces or tabs in a row

Hit = tuple[str, str]  # (rule id, message)

# --- TP001 invisible characters ---


def _allowed_invisible(text: str, index: int) -> bool:
    """Invisible characters that are part of ordinary writing: a joiner inside an emoji or a
    script that needs it, one variation selector after a symbol, a keycap, an ideograph, and
    the tags of a subdivision flag."""
    code = ord(text[index])
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if code in (0x200C, 0x200D):
        return bool(before and after) and not before.isascii() and not after.isascii() and not is_invisible(ord(before)) and not is_invisible(ord(after))
    if code in (0xFE0E, 0xFE0F):
        keycap = before in "0123456789#*" and after == "\u20e3"
        return bool(before) and (keycap or (not before.isascii() and not is_invisible(ord(before))))
    if 0xE0100 <= code <= 0xE01EF:
        return bool(before) and unicodedata.name(before, "").startswith("CJK")
    if 0xE0020 <= code <= 0xE007F:  # a flag: U+1F3F4, a few tag letters, then CANCEL TAG
        start = index
        while start > 0 and 0xE0020 <= ord(text[start - 1]) <= 0xE007F:
            start -= 1
        end = index
        while end + 1 < len(text) and 0xE0020 <= ord(text[end + 1]) <= 0xE007F:
            end += 1
        return start > 0 and text[start - 1] == "\U0001f3f4" and text[end] == "\U000e007f" and end - start < 7
    return False


def invisible(text: str) -> Iterator[Hit]:
    found = [i for i in invisible_at(text) if not _allowed_invisible(text, i)]
    if not found:
        return
    names = sorted({f"U+{ord(text[i]):04X} {unicodedata.name(text[i], 'control')}" for i in found})
    message = f"{len(found)} invisible or control character{'s' if len(found) > 1 else ''} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
    payload = tag_payload(text)
    if payload:
        message += f"; the tag characters spell '{shown(payload)}'"
    yield "TP001", message


# --- TP003 instructions addressed to the model ---

_LIGHT_WS = re.compile(r"\s+")
_MARKUP = re.compile(
    r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|sys|assistant|context)\b[^<>]{0,40}>"
    r"|\[/?\s*(inst|system|sys)\s*\]|<<\s*/?\s*sys\s*>>"
    r"|<\|\s*(im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|>"
    r"|(?:^|\n)\s*#{1,6}\s*(system|instructions)\b"
)
_QUALIFIERS = "all|any|every|of|the|your|my|these|those|previous|prior|above|earlier|preceding|foregoing|original|system|safety|existing|other|former|developer|user|users"
_OVERRIDE = re.compile(
    rf"\b(ignore|disregard|forget|override|bypass)((?: (?:{_QUALIFIERS}))+) "
    r"(instructions?|prompts?|directions|guidelines|guidance|rules|messages|constraints|policies|context|commands)\b"
    r"(?P<defensive> (in|inside|within|from|contained|embedded|found)( in)?( the| any)?( fetched| retrieved| returned)? "
    r"(content|page|pages|document|documents|result|results|output|data|response|web|website|file|files|text|html))?"
)
_PLAIN_QUALIFIERS = frozenset({"of", "the", "these", "those"})
_DIRECTIVES = [
    re.compile(p)
    for p in (
        r"\b(do not|dont|don t|never|must not|should not|shall not)( \w+){0,2} (tell|inform|mention|reveal|show|notify|alert|disclose|report)( this| it| anything| that)?( to)? (the )?(user|human|operator)\b",
        r"\bwithout (telling|informing|notifying|alerting|letting) (the )?(user|human)\b",
        r"\b(keep|hide) (this|it|these|that)( \w+)?( secret| hidden| private| confidential)? from (the )?(user|human)\b",
        r"\b(the )?(user|human) (must|should|will|need|needs) (not|never) (know|see|notice|be told|find out)\b",
        r"\b(user|human) (has|have) (already )?(approved|authorized|authorised|consented|agreed|confirmed)\b",
        r"\bno need to (ask|confirm|tell|inform|notify)\b",
        r"\b(you are now|from now on|new instructions|updated instructions|system override|developer mode)\b",
        r"\b(reveal|print|output|repeat|include|send|leak) (your|the)( full| entire| whole| complete)? (system prompt|hidden instructions)\b",
        r"\b(include|send|pass|append|attach|copy|forward|upload|post|leak|add) (the |your |this |our |all )?(full |entire |whole |complete |previous )?(conversation|chat) (history|log|transcript|messages)\b",
        r"\bbefore (using|calling|invoking|running|executing|answering|responding)\b.{0,120}?\b(read|cat|open|load|send|upload|post|forward|include|copy)\b"
        r".{0,80}?\b(ssh|id rsa|id ed25519|credentials?|secrets?|passwd|mcp json|private keys?|aws|kube|env file|dotenv)\b",
    )
]
_SQUEEZED = (
    "ignorepreviousinstructions", "ignoreallpreviousinstructions", "ignoreallinstructions", "ignoreyourinstructions",
    "disregardpreviousinstructions", "disregardallinstructions", "forgetpreviousinstructions", "forgetallinstructions",
    "donottelltheuser", "dontelltheuser", "donotinformtheuser", "donotmentionthistotheuser", "donotrevealthistotheuser",
)  # fmt: skip


# Digits written for letters ("1gn0re prev10us 1nstruct10ns"): 1 is read as i and as l.
_LEET = [str.maketrans("0134578", "oieastb"), str.maketrans("0134578", "oleastb")]


def light(text: str) -> str:
    """NFKC, invisibles stripped, casefolded, whitespace one space: punctuation kept (for markup and paths)."""
    return _LIGHT_WS.sub(" ", unicodedata.normalize("NFKC", visible(text)).casefold())


def instructions(text: str) -> Iterator[Hit]:
    found = _MARKUP.search(unicodedata.normalize("NFKC", visible(text)).casefold())
    if found:
        yield "TP003", f"markup addressed to the model: '{shown(found.group(0).strip())}'"
        return
    folded = fold(text)
    for match in _OVERRIDE.finditer(folded):
        if match.group("defensive") is None and set(match.group(2).split()) - _PLAIN_QUALIFIERS:
            yield "TP003", f"tells the model to {match.group(1)} its instructions: '{shown(match.group(0))}'"
            return
    for pattern in _DIRECTIVES:
        directive = pattern.search(folded)
        if directive:
            yield "TP003", f"an instruction to the model: '{shown(directive.group(0))}'"
            return
    squeeze = squeezed(text)
    for reading in dict.fromkeys([squeeze, *(squeeze.translate(table) for table in _LEET)]):
        for phrase in _SQUEEZED:
            if phrase in reading:
                yield "TP003", f"an instruction to the model, spelled out: {phrase!r}"
                return


# --- TP004 credential paths ---

_CREDENTIALS = re.compile(
    r"(?<![\w-])(~|\$home|%userprofile%)?[\w/.-]*?(\.ssh(?![\w-])|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/(credentials|config)\b|\.gnupg\b"
    r"|\.kube/config\b|\.docker/config\.json\b|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials\b|\.config/gcloud\b"
    r"|/etc/(shadow|sudoers|passwd)\b|\bmcp\.json\b|claude_desktop_config\.json\b|\.cursor/|\.vscode/settings\.json\b|\blogin\.keychain\b)"
)


def credential_paths(text: str) -> Iterator[Hit]:
    match = _CREDENTIALS.search(light(text))
    if match:
        yield "TP004", f"names a credential file: '{shown(match.group(0))}'"


# --- TP006 / TP007 URLs ---

_URL = re.compile(r"(?i)(?<![\w.+-])((?:https?|ftp|wss?|javascript|data):(?:[^\s<>\"'`)\]]|<[\w ]{1,40}>)+|//[a-z0-9-]+(?:\.[a-z0-9-]+)+\.[a-z]{2,}(?::\d+)?(?:/[^\s<>\"'`)\]]*)?|www\.[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}[^\s<>\"'`)\]]*)")
_BARE_HOST = re.compile(r"(?i)(?<![\w./@:-])((?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|xyz|ai|ru|cn|info|biz|site|online|top|cc|tk|app))(?![\w.-]*\w)(?::\d+)?")
_IMAGE = re.compile(r"(?i)!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img\b[^>]*\bsrc\s*=\s*[\"']?([^\"'\s>]+)")
_TEMPLATE = re.compile(r"\{[^{}]{1,60}\}|<[a-z_ ]{1,40}>|\$\{?[a-z_]+|%s|\[(?:data|secret|key|token|content|contents|conversation|history)\]", re.IGNORECASE)
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


def _matches(entry: Destination, host: str, port: int | None) -> bool:
    if entry.port is not None and port is not None and entry.port != port:
        return False
    if entry.kind == "domain":
        return host == entry.host
    if entry.kind == "wildcard":
        return host.endswith(entry.host[1:])
    try:
        return ipaddress.ip_address(host.strip("[]")) in entry.network
    except ValueError:
        return False


def allowed(ctx: ServerContext, host: str, port: int | None) -> bool:
    """Whether the server's egress policy lets it reach ``host:port`` (the deny list wins)."""
    host = host.lower().rstrip(".")
    if any(_matches(entry, host, port) for entry in ctx.deny):
        return False
    return ctx.egress_open or any(_matches(entry, host, port) for entry in ctx.allow)


def urls(text: str, ctx: ServerContext) -> Iterator[Hit]:
    clean = unicodedata.normalize("NFKC", visible(text))
    for match in _IMAGE.finditer(clean):
        target = match.group(1) or match.group(2) or ""
        if "?" in target or _TEMPLATE.search(target) or target.lower().startswith("data:"):
            yield "TP006", f"an image link the client would load with data in it: '{shown(target)}'"
            return
    outside: list[str] = []
    for match in _URL.finditer(clean):
        url = match.group(1).rstrip(".,;:!")  # a sentence's end is not the URL's
        scheme = url.split(":", 1)[0].lower()
        if scheme in ("data", "javascript"):
            yield "TP006", f"a {scheme}: URL: '{shown(url)}'"
            return
        target = url if "://" in url or url.startswith("//") else "//" + url
        try:
            parts = urlsplit(target)
            host, port = parts.hostname or "", parts.port
        except ValueError:
            yield "TP006", f"a malformed URL: '{shown(url)}'"
            return
        port = port if port is not None else DEFAULT_PORTS.get(scheme)
        if not host or allowed(ctx, host, port):  # the server may reach it: a link to its own API
            continue
        if _TEMPLATE.search(parts.query) or _TEMPLATE.search(parts.path):
            yield "TP006", f"a URL to fill with data, to {shown(host)}, which the server's egress does not allow: '{shown(url)}'"
            return
        if parts.query:
            yield "TP006", f"a URL with a query to {shown(host)}, which the server's egress does not allow: '{shown(url)}'"
            return
        outside.append(host)
    for match in _BARE_HOST.finditer(clean):
        if not allowed(ctx, match.group(1), None) and not any(match.group(1).lower() == host.lower() for host in outside):
            outside.append(match.group(1))
    if outside:
        yield "TP007", f"names {', '.join(sorted({shown(h.lower()) for h in outside}))}, which the server's egress does not allow"


# --- TP008 length ---

_BLANKS = re.compile(rf"(?:[ \t]*\r?\n){{{MAX_BLANK_LINES + 1},}}")
_SPACES = re.compile(rf"[ \t\u00a0\u3000]{{{MAX_SPACES + 1},}}")


def length(text: str, own_description: bool) -> Iterator[Hit]:
    limit = MAX_DESCRIPTION if own_description else MAX_STRING
    if len(text) > limit:
        yield "TP008", f"{len(text)} characters (more than {limit})"
    elif _BLANKS.search(text):
        yield "TP008", f"more than {MAX_BLANK_LINES} blank lines in a row push what follows out of view"
    elif _SPACES.search(text):
        yield "TP008", f"more than {MAX_SPACES} spaces in a row push what follows out of view"


# --- text hidden in base64 ---

_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}|[A-Za-z0-9_-]{24,}={0,2}")
MAX_DECODED = 16  # base64 runs decoded in one string, at every depth together
MAX_DEPTH = 4  # base64 in base64 in ...: a model peels as many layers as it is asked to; each adds a third


def _runs(text: str) -> Iterator[str]:
    """What each base64 run of ``text`` decodes to, when that is printable UTF-8 text."""
    for match in _BASE64.finditer(text):
        token = match.group(0).rstrip("=")
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None, validate=True)
            plain = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if plain and sum(char.isprintable() or char in "\n\t" for char in plain) >= 0.9 * len(plain):
            yield plain


def decoded(text: str) -> Iterator[tuple[str, int]]:
    """What each base64 run of ``text`` (standard or URL-safe, 24 characters or more) decodes to, when
    that is printable UTF-8 text, and what the runs in that decode to, down to ``MAX_DEPTH`` layers;
    each with its depth (1: decoded once). A model decodes an instruction written in base64, and in
    base64 of base64. At most ``MAX_DECODED`` runs in all, the shallower first."""
    layer, count = [text], 0
    for depth in range(1, MAX_DEPTH + 1):
        below: list[str] = []
        for source in layer:
            for plain in _runs(source):
                if count >= MAX_DECODED:
                    return
                count += 1
                yield plain, depth
                below.append(plain)
        layer = below


def _read(text: str, ctx: ServerContext) -> Iterator[Hit]:
    yield from instructions(text)
    yield from credential_paths(text)
    yield from urls(text, ctx)


def scan_string(text: str, ctx: ServerContext, own_description: bool) -> Iterator[Hit]:
    """Every per-string rule on one string (and on what its tag characters spell and its base64 decodes to)."""
    yield from invisible(text)
    for candidate in (text, tag_payload(text)):
        if not candidate:
            continue
        yield from _read(candidate, ctx)
        for plain, depth in decoded(candidate):
            for rule, message in _read(plain, ctx):
                yield rule, f"in base64{f' ({depth} layers)' if depth > 1 else ''}: {message}"
    yield from length(text, own_description)
