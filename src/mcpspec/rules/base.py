"""What a rule is: an ID, a slug, a severity, its docs and a pure check over the Plan.

A rule module holds one rule (yamllint's layout): its docstring is the user
documentation, with the sections in DOC_SECTIONS, and ``RULE`` declares it.
A check yields Findings that name a logical path; the engine, never the rule,
turns paths into file:line:col.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from mcpspec.diagnostics import Span, SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.perf import quick_init

Severity = Literal["critical", "high", "medium", "low", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low", "info")
# SARIF security-severity per severity: GitHub buckets >= 9.0 critical, >= 7.0 high, >= 4.0 medium.
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "0.0"}

CATEGORIES = {
    "TS": "tool-scope",
    "PL": "placement",
    "FS": "filesystem",
    "SE": "secrets",
    "NW": "network",
    "SP": "subprocess",
    "LC": "lifecycle",
    "LG": "logging",
    "HR": "human-review",
    "TE": "testing",
    "GR": "graph",
    "SU": "suppressions",
    "TG": "targets",
    "TP": "tool-poisoning",
}
DOC_SECTIONS = ("What it does", "Why is this risky", "Example", "Use instead", "References")
RULE_ID = re.compile(r"^(?P<category>[A-Z]{2})\d{3}$")
SLUG = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@quick_init
@dataclass(frozen=True, slots=True)
class Related:
    """Another place a finding involves, with a note on its part in it."""

    path: SpecPath
    note: str


@quick_init
@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports: a logical path, a message, and related places."""

    path: SpecPath
    message: str
    related: tuple[Related, ...] = ()
    # Only for findings about comments, which have no logical path of their own.
    span: Span | None = None
    # Every item the message names in short (the addresses a policy leaves open): JSON output lists them.
    items: tuple[str, ...] = ()


Check = Callable[[Plan], Iterable[Finding]]


# Where the rule pages (docs/rules/ of this repository) are published; SARIF's helpUri is this
# folder and the page's file name. `docs-url` in the config or `--docs-url` points at a copy.
DEFAULT_DOCS_URL = "https://mcpspec.dev/docs/rules/"

@dataclass(frozen=True)
class Rule:
    """One risk rule."""

    id: str
    slug: str
    severity: Severity
    summary: str
    # None for the rules the suppression pass reports (an unused suppression, an
    # expired waiver): they depend on other rules' results or on today's date.
    check: Check | None
    doc: str = field(repr=False)

    @property
    def category(self) -> str:
        return CATEGORIES[self.id[:2]]

    def section(self, title: str) -> str:
        """The text of one ``## title`` section of the docs ('' when missing)."""
        return doc_sections(self.doc).get(title, "")

    def help_uri(self, docs_url: str = DEFAULT_DOCS_URL) -> str:
        """The absolute URL of this rule's page under ``docs_url`` (a folder URL ending in ``/``)."""
        return f"{docs_url}{self.id}-{self.slug}.md"


def doc_sections(doc: str) -> dict[str, str]:
    """``## Heading`` -> body, in order."""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in doc.strip().splitlines():
        if line.startswith("## "):
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = line[3:].strip(), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def yaml_block(section: str) -> str:
    """The first ```yaml fenced block of a doc section."""
    match = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    return match.group(1) if match else ""
