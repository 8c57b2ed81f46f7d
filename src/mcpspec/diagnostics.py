"""Positions, logical paths and the diagnostics every stage reports."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mcpspec.perf import quick_init

PathSegment = str | int
SpecPath = tuple[PathSegment, ...]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_PATH_TOKEN = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


@quick_init
@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file; lines and columns are 1-based, the end is exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int


FILE_START = Span(1, 1, 1, 1)


@quick_init
@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a file, at a place, with a stable code."""

    file: str
    span: Span
    code: str
    message: str
    path: SpecPath = field(default=())
    severity: str = "error"

    def format(self) -> str:
        return f"{self.file}:{self.span.line}:{self.span.col}: {self.code} {self.message}"


class SpecError(Exception):
    """Raised when a file cannot become a Spec or a Plan; carries positioned diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("\n".join(d.format() for d in diagnostics))
        self.diagnostics = diagnostics


def format_path(path: SpecPath) -> str:
    """Render a logical path the way users write it: ``servers.fetch.egress.allow[1]``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _PLAIN_KEY.match(seg):
            out.append(f".{seg}" if out else seg)
        else:
            escaped = seg.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out)


def parse_path(text: str) -> SpecPath:
    """Parse what :func:`format_path` writes; raise ValueError on anything else."""
    segments: list[PathSegment] = []
    pos = 0
    while pos < len(text):
        match = _PATH_TOKEN.match(text, pos)
        if match is None or (pos == 0 and text.startswith(".")):
            raise ValueError(f"not a logical path: {text!r} (write it like servers.fetch.egress.allow[1])")
        key, index, quoted = match.groups()
        if key is not None:
            if pos > 0 and not text.startswith(".", pos):
                raise ValueError(f"not a logical path: {text!r} (missing '.' before {key!r})")
            segments.append(key)
        elif index is not None:
            segments.append(int(index))
        else:
            segments.append(re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    if not segments:
        raise ValueError("empty logical path")
    return tuple(segments)
