"""Lint configuration: `.mcpspec.yaml` (or `.mcpspec.yml`), or `[tool.mcpspec]` in
pyproject.toml, found by searching upward from the spec's directory (so a spec gets the same
config from any working directory; standard input searches from the working directory).

Keys (hyphens and underscores are the same): select, ignore, severity
(rule -> severity), fail-on, per-file-ignores (glob -> rules), baseline (a path
relative to the config file), no-inline-suppressions, docs-url (the folder URL of the rule pages
that SARIF's helpUri links); and for `mcpspec run`, approver (the
approval command, split into words as a shell would, never run by one) and approver-timeout
(seconds).
"""

from __future__ import annotations

import fnmatch
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcpspec.rules.base import DEFAULT_DOCS_URL, Severity

if TYPE_CHECKING:
    from mcpspec.config_errors import Locate

FailOn = Literal["critical", "high", "medium", "low", "info", "never"]
CONFIG_NAMES = (".mcpspec.yaml", ".mcpspec.yml")


class ConfigError(Exception):
    """A config file or a command-line choice that cannot be used: exit status 2."""


class _ConfigModel(BaseModel):
    # Built on first use: a lint without a config file never validates one.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

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
    within: str | None = Field(None, min_length=1)


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
    within: Path | None = None  # the boundary `mcpspec check` holds specs to

    def ignored_for(self, file: str) -> list[str]:
        """Rules per-file-ignores turns off for ``file`` (globs match the path as given, the path
        from the config's directory, or the file's name)."""
        shown = [file, Path(file).name, *self._from_config_dir(file)]
        names: list[str] = []
        for pattern, rules in self.per_file_ignores.items():
            if any(fnmatch.fnmatch(candidate, pattern) for candidate in shown):
                names.extend(rules)
        return names

    def _from_config_dir(self, file: str) -> list[str]:
        if self.path is None or not file:
            return []
        try:
            return [Path(file).absolute().relative_to(self.path.absolute().parent).as_posix()]
        except ValueError:  # the file is not under the config's directory
            return []


def split_approver(text: str, where: str = "--approver") -> list[str]:
    """An approver command line split into words as a POSIX shell would (no shell ever runs it)."""
    import shlex

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
    """Read and validate a config file; raise ConfigError naming the file, with ``FILE:LINE:COL:``
    and a did-you-mean where it can (see :mod:`mcpspec.config_errors`)."""
    if path is None:
        return LintConfig()
    import tomllib

    from mcpspec.config_errors import format_problems, problems

    try:
        raw, locate = _read(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: cannot read config: nested too deeply") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:1:1: a config is a mapping of keys such as select, ignore, fail-on")
    normalized = {str(key).replace("-", "_"): value for key, value in raw.items()}
    raw_keys = {str(key).replace("-", "_"): str(key) for key in raw}
    try:
        model = _ConfigModel.model_validate(normalized)
    except ValidationError as exc:
        found = problems(exc, raw_keys, _ConfigModel.model_fields, raw)
        raise ConfigError(format_problems(path, [(locate(where, key), message) for where, key, message in found])) from None
    unknown = _unknown_rules(model, raw_keys)
    if unknown:
        raise ConfigError(format_problems(path, [(locate(where, key), message) for where, key, message in unknown]))
    baseline = (path.parent / model.baseline) if model.baseline else None

    def at(key: str) -> str:
        line, col = locate((raw_keys.get(key, key),), False)
        return f"{path}:{line}:{col}: {raw_keys.get(key, key)}"

    approver = split_approver(model.approver, at("approver")) if model.approver is not None else None
    return LintConfig(
        path=path,
        select=model.select,
        ignore=model.ignore,
        severity=model.severity,
        fail_on=model.fail_on,
        per_file_ignores=model.per_file_ignores,
        baseline=baseline,
        no_inline_suppressions=model.no_inline_suppressions,
        docs_url=check_docs_url(model.docs_url, at("docs_url")) if model.docs_url is not None else None,
        approver=approver,
        approver_timeout=model.approver_timeout,
        within=(path.parent / model.within) if model.within is not None else None,
    )


def _unknown_rules(model: _ConfigModel, raw_keys: dict[str, str]) -> list[tuple[tuple[str | int, ...], bool, str]]:
    """(path, points at a key, message) for each rule name in the config that names no rule."""
    from mcpspec.config_errors import suggestion
    from mcpspec.diagnostics import format_path
    from mcpspec.rules.registry import all_rules, expand

    named: list[tuple[tuple[str | int, ...], bool, str]] = []
    for field_name in ("select", "ignore"):
        named += [((raw_keys.get(field_name, field_name), index), False, name) for index, name in enumerate(getattr(model, field_name) or [])]
    named += [((raw_keys.get("severity", "severity"), name), True, name) for name in model.severity]
    for pattern, names in model.per_file_ignores.items():
        named += [((raw_keys.get("per_file_ignores", "per-file-ignores"), pattern, index), False, name) for index, name in enumerate(names)]
    choices = [name for rule in all_rules() for name in (rule.id, rule.slug)]
    found: list[tuple[tuple[str | int, ...], bool, str]] = []
    for where, key, name in named:
        try:
            expand([name])
        except ValueError:
            shown = format_path(where)
            hint = suggestion(name.upper() if name[:2].isalpha() and name[2:].isdigit() else name, choices)
            found.append((where, key, f"{shown}: no rule is named {name!r}{hint} (see `mcpspec rules`)"))
    return found


def _read(path: Path) -> tuple[Any, Locate]:
    """The config's data and a function that finds where a key or value of it is written."""
    import tomllib

    from mcpspec.config_errors import toml_locator, yaml_locator
    from mcpspec.diagnostics import SpecError
    from mcpspec.source.loader import parse_text

    if path.name == "pyproject.toml":
        text = path.read_text(encoding="utf-8")
        tool = tomllib.loads(text).get("tool", {})
        data = tool.get("mcpspec", {}) if isinstance(tool, dict) else tool  # `tool = 1` is no mapping: load_config says so
        return data, toml_locator(text, data if isinstance(data, dict) else {})
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, _nowhere
    try:
        data, source = parse_text(text, str(path))
    except SpecError as exc:
        if all(d.code == "YM008" for d in exc.diagnostics):  # only comments
            return {}, _nowhere
        raise ConfigError("; ".join(d.format() for d in exc.diagnostics)) from None
    return data, yaml_locator(source)


def _nowhere(path: Sequence[str | int], key: bool) -> tuple[int, int]:
    return 1, 1
