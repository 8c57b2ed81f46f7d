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
    than looped over a tuple: the loop costs more than the tests. "gh" covers GitHub's
    ``ghp_`` to ``ghr_``, "xox" every Slack prefix, "sk-" OpenAI's and Anthropic's.
    """
    return (
        "gh" in text or "github_pat_" in text or "xox" in text or "sk-" in text or "glpat-" in text or "npm_" in text or "AKIA" in text or "ASIA" in text
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


def redact(text: str) -> str:
    """``text`` with every secret-shaped substring masked."""
    if not text or not _might_hold_secret(text):
        return text
    return SECRET_VALUE.sub(_mask, text)
