"""Path globs over normalised segments: ``*`` and ``?`` within one segment, ``**`` (a whole segment)
for any number of segments, none included, so ``/workspace/output/**`` is the directory and all under it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

MAX_STARS_PER_SEGMENT = 3  # bounds the backtracking of one segment's match on a 255-character name
MAX_DEEP = 4  # ``**`` segments in one glob


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a glob this language accepts (its path form is checked apart); None when it is."""
    for part in pattern.split("/")[1:]:
        if "**" in part and part != "**":
            return "'**' is a whole segment (/a/**/b), never part of one"
        if part.count("*") > MAX_STARS_PER_SEGMENT:
            return f"at most {MAX_STARS_PER_SEGMENT} '*' in one segment"
        if "[" in part or "]" in part or "{" in part or "}" in part:
            return "a glob has no [...] or {...}: only *, ? and **"
    if pattern.split("/").count("**") > MAX_DEEP:
        return f"at most {MAX_DEEP} '**' segments"
    return None


def _segment(part: str, casefold: bool) -> re.Pattern[str] | str:
    if "*" not in part and "?" not in part:
        return part.casefold() if casefold else part
    text = "".join("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in (part.casefold() if casefold else part))
    return re.compile(text, re.DOTALL)


@dataclass(frozen=True)
class Glob:
    """A compiled glob; ``root`` is its literal head, the directory every path it matches lies in."""

    pattern: str
    casefold: bool = False

    @functools.cached_property
    def parts(self) -> tuple[re.Pattern[str] | str, ...]:
        return tuple("**" if part == "**" else _segment(part, self.casefold) for part in self.pattern.split("/")[1:] if part)

    @property
    def root(self) -> tuple[str, ...]:
        head: list[str] = []
        for part in self.pattern.split("/")[1:]:
            if not part or "*" in part or "?" in part:
                break
            head.append(part)
        return tuple(head)

    def matches(self, path: tuple[str, ...]) -> bool:
        at = {0}  # how many segments of ``path`` the glob's parts so far can have taken
        for part in self.parts:
            if part == "**":
                at = set(range(min(at), len(path) + 1)) if at else at
            else:
                at = {j + 1 for j in at if j < len(path) and (path[j] == part if isinstance(part, str) else part.fullmatch(path[j]) is not None)}
            if not at:
                return False
        return len(path) in at
