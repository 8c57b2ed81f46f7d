"""Secret-shaped strings, and masking them wherever mcpspec prints text.

A spec may hold a literal token by mistake (rule SE001 reports it). Lint
output goes to CI logs, which are often public, so no message and no code
frame ever repeats such a value: it is masked down to its recognizable prefix.
"""

from __future__ import annotations

import re

SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[A-Z0-9]{16}"
    r"|sk-ant-[A-Za-z0-9_-]{10,}|sk-(proj-)?[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{30,}"
    r"|AIza[0-9A-Za-z_-]{35}|-----BEGIN [A-Z ]*PRIVATE KEY-----|[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.)"
)
MASK = "****"
# Every alternative of SECRET_VALUE contains one of these; most text holds none, and `in` is far
# cheaper than the regex's scan (lint of 10,000 servers redacts about 300,000 messages).
_MARKERS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "AKIA", "ASIA",
            "sk-", "glpat-", "npm_", "AIza", "-----BEGIN", "://", "eyJ")


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
    if not text or not any(marker in text for marker in _MARKERS):
        return text
    return SECRET_VALUE.sub(_mask, text)
