"""Secret-shaped strings, and masking them wherever mcpspec prints text.

A spec may hold a literal token by mistake (rule SE001 reports it). Lint
output goes to CI logs, which are often public, so no message and no code
frame ever repeats such a value: it is masked down to its recognizable prefix.

`mcpspec run` masks what a server and a model send through this pattern too, so
every part that can fail after a long scan is bounded (a URL scheme, a JWT header):
the time stays linear in the text, whatever the text.
"""

from __future__ import annotations

import re

SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[A-Z0-9]{16}"
    r"|sk-ant-[A-Za-z0-9_-]{10,}|sk-(proj-)?[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{30,}"
    r"|AIza[0-9A-Za-z_-]{35}|-----BEGIN [A-Z ]{0,64}PRIVATE KEY-----|[a-z][a-z0-9+.-]{0,31}://[^/\s:@]+:[^/\s@]+@"
    r"|eyJ[A-Za-z0-9_-]{8,512}\.eyJ[A-Za-z0-9_-]{8,}\.)"
)
MASK = "****"


def _might_hold_secret(text: str) -> bool:
    """Whether ``text`` holds a substring that every match of SECRET_VALUE contains.

    Most text holds none, and a chain of ``in`` tests is far cheaper than the regex's scan
    (lint of 10,000 servers redacts about 285,000 messages and notes). Written out rather
    than looped over a tuple: the loop costs more than the tests. GitHub's ``ghp_`` to ``ghr_``
    are tested whole (plain "gh" is in "through", which rule messages often say), "xox" covers
    every Slack prefix, "sk-" OpenAI's and Anthropic's.
    """
    return (
        "ghp_" in text or "gho_" in text or "ghu_" in text or "ghs_" in text or "ghr_" in text or "github_pat_" in text or "xox" in text or "sk-" in text or "glpat-" in text or "npm_" in text or "AKIA" in text or "ASIA" in text
        or "AIza" in text or "-----BEGIN" in text or "://" in text or "eyJ" in text
    )


def _mask(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith("-----BEGIN"):
        return found  # the marker names the format; the key body is on other lines
    if "://" in found:
        scheme, rest = found.split("://", 1)
        return f"{scheme}://{rest.split(':', 1)[0]}:{MASK}@"
    return found[:4] + MASK


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds a secret-shaped substring (the regex runs only where a marker is)."""
    return _might_hold_secret(text) and SECRET_VALUE.search(text) is not None


def redact(text: str) -> str:
    """``text`` with every secret-shaped substring masked."""
    if not text or not _might_hold_secret(text):
        return text
    return SECRET_VALUE.sub(_mask, text)


def redact_range(text: str, start: int, end: int) -> tuple[str, int, int]:
    """``text`` redacted, and the 0-based range ``[start, end)`` of ``text`` moved to where it
    lies in the result (a range that starts or ends inside a masked value covers its mask), so
    carets under a code frame stay under the value they point at."""
    if not text or not _might_hold_secret(text):
        return text, start, end
    out: list[str] = []
    shift = 0  # how much shorter the result is than text, up to the last masked value
    new_start, new_end = start, end
    done_start = done_end = False
    last = 0
    for match in SECRET_VALUE.finditer(text):
        begin, finish = match.span()
        mask = _mask(match)
        if not done_start and start < finish:
            new_start = start - shift if start < begin else begin - shift
            done_start = True
        if not done_end and end <= finish:
            new_end = end - shift if end <= begin else begin - shift + len(mask)
            done_end = True
        out.append(text[last:begin])
        out.append(mask)
        last = finish
        shift += (finish - begin) - len(mask)
    out.append(text[last:])
    if not done_start:
        new_start = start - shift
    if not done_end:
        new_end = end - shift
    return "".join(out), new_start, new_end
