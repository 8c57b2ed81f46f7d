"""What the import tells the user: literal secrets to rotate, approval bypasses, servers it
could not place. Printed like lint's findings (``FILE:LINE:COL: CODE [severity] slug: message``);
no message ever holds a value from the client config, only names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcpspec.importer.model import ImportedConfig, Pointer
from mcpspec.importer.reading import position
from mcpspec.redact import redact

# code -> (severity, slug)
CODES = {
    "IM001": ("critical", "literal-secret"),
    "IM002": ("high", "approval-bypass"),
    "IM003": ("medium", "not-sandboxed"),
    "IM004": ("medium", "unknown-binary"),
    "IM005": ("info", "disabled-server"),
    "IM006": ("low", "env-file-not-read"),
    "IM007": ("info", "client-tool-filter"),
    "IM008": ("low", "client-auto-start"),
    "IM009": ("info", "name-changed"),
    "IM010": ("info", "already-imported"),
    "IM011": ("high", "container-escape-flag"),
    "IM012": ("medium", "editor-variable"),
    "IM013": ("medium", "archived-server"),
}


@dataclass(frozen=True)
class ImportFinding:
    code: str
    file: str
    line: int
    col: int
    message: str

    @property
    def severity(self) -> str:
        return CODES[self.code][0]

    @property
    def slug(self) -> str:
        return CODES[self.code][1]

    def render(self) -> str:
        """One line: a control character or line break from the client's config (a flag, a name) is written escaped."""
        line = f"{self.file}:{self.line}:{self.col}: {self.code} [{self.severity}] {self.slug}: {self.message}"
        return redact(escaped(line))


# Line breaks, control characters, and what YAML allows nowhere in a stream (surrogates, U+FFFE, U+FFFF).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def escaped(text: str) -> str:
    """``text`` on one line: each character of CONTROL written as its Python escape."""
    return CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def finding(config: ImportedConfig, code: str, pointer: Pointer, message: str) -> ImportFinding:
    line, col = position(config.text, pointer)
    return ImportFinding(code, config.path, line, col, message)


def summary(findings: list[ImportFinding], servers: int, client: str, written: str) -> str:
    counts: dict[str, int] = {}
    for item in findings:
        counts[item.severity] = counts.get(item.severity, 0) + 1
    order = ("critical", "high", "medium", "low", "info")
    shown = ", ".join(f"{counts[level]} {level}" for level in order if level in counts)
    return f"imported {servers} servers from the {client} config into {written}: {len(findings)} findings" + (f" ({shown})" if shown else "")
