"""Lint configuration: `.mcpspec.yaml` (or `.mcpspec.yml`), or `[tool.mcpspec]` in
pyproject.toml, found by searching upward from the working directory.

Keys (hyphens and underscores are the same): select, ignore, severity
(rule -> severity), fail-on, per-file-ignores (glob -> rules), baseline (a path
relative to the config file), no-inline-suppressions, docs-url (the folder URL of the rule pages
that SARIF's helpUri links); and for `mcpspec run`, approver (the
approval command, split into words as a shell would, never run by one) and approver-timeout
(seconds).
"""

from __future__ import annotations

import fnmatch
import shlex
import tomllib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcpspec.rules.base import DEFAULT_DOCS_URL, Severity

FailOn = Literal["critical", "high", "medium", "low", "info", "never"]
CONFIG_NAMES = (".mcpspec.yaml", ".mcpspec.yml")


class ConfigError(Exception):
    """A config file or a command-line choice that cannot be used: exit status 2."""


class _ConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    select: list[str] | None = None
    ignore: list[str] = Field(default_factory=list)
    severity: dict[str, Severity] = Field(default_factory=dict)
    fail_on: FailOn | None = None
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict)
    baseline: str | None = None
    no_inline_suppressions: bool = False
    docs_url: str | None = None
    approver: str | None = Field(None, min_length=1)
    approver_timeout: float | None = Field(None, gt=0)


@dataclass(frozen=True)
class LintConfig:
    """A validated config and where it came from (None: built-in defaults)."""

    path: Path | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Severity] = field(default_factory=dict)
    fail_on: FailOn | None = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    baseline: Path | None = None
    no_inline_suppressions: bool = False
    docs_url: str | None = None
    approver: list[str] | None = None
    approver_timeout: float | None = None

    def ignored_for(self, file: str) -> list[str]:
        """Rules per-file-ignores turns off for ``file`` (globs match the path or its name)."""
        names: list[str] = []
        for pattern, rules in self.per_file_ignores.items():
            if fnmatch.fnmatch(file, pattern) or fnmatch.fnmatch(Path(file).name, pattern):
                names.extend(rules)
        return names


def split_approver(text: str, where: str = "--approver") -> list[str]:
    """An approver command line split into words as a POSIX shell would (no shell ever runs it)."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not argv:
        raise ConfigError(f"{where}: the command is empty")
    return argv


def check_docs_url(text: str, where: str = "--docs-url") -> str:
    """An absolute http(s) URL of the folder of rule pages, ending in ``/``; ConfigError otherwise."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment or any(c.isspace() for c in text):
        raise ConfigError(f"{where}: {text!r} is not an absolute http(s) URL of the folder of rule pages, such as {DEFAULT_DOCS_URL}")
    return text if text.endswith("/") else text + "/"


def find_config(start: Path) -> Path | None:
    """The nearest `.mcpspec.yaml`/`.yml`, or pyproject.toml with [tool.mcpspec], at or above ``start``."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            if (directory / name).is_file():
                return directory / name
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and "[tool.mcpspec" in pyproject.read_text(encoding="utf-8", errors="replace"):
            return pyproject
    return None


def load_config(path: Path | None) -> LintConfig:
    """Read and validate a config file; raise ConfigError with the file named on any problem."""
    if path is None:
        return LintConfig()
    try:
        raw = _read(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config is a mapping of keys such as select, ignore, fail-on")
    normalized = {str(key).replace("-", "_"): value for key, value in raw.items()}
    try:
        model = _ConfigModel.model_validate(normalized)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False))
        raise ConfigError(f"{path}: {problems}") from None
    baseline = (path.parent / model.baseline) if model.baseline else None
    approver = split_approver(model.approver, f"{path}: approver") if model.approver is not None else None
    return LintConfig(
        path=path,
        select=model.select,
        ignore=model.ignore,
        severity=model.severity,
        fail_on=model.fail_on,
        per_file_ignores=model.per_file_ignores,
        baseline=baseline,
        no_inline_suppressions=model.no_inline_suppressions,
        docs_url=check_docs_url(model.docs_url, f"{path}: docs-url") if model.docs_url is not None else None,
        approver=approver,
        approver_timeout=model.approver_timeout,
    )


def _read(path: Path) -> Any:
    if path.name == "pyproject.toml":
        with path.open("rb") as handle:
            return tomllib.load(handle).get("tool", {}).get("mcpspec", {})
    from mcpspec.diagnostics import SpecError
    from mcpspec.source.loader import parse_text

    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data, _ = parse_text(text, str(path))
    except SpecError as exc:
        if all(d.code == "YM008" for d in exc.diagnostics):  # only comments
            return {}
        raise ConfigError("; ".join(d.format() for d in exc.diagnostics)) from None
    return data
