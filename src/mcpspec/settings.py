"""What a command runs with: the config file's choices under the command line's, decided once.

Every command that reads a spec (lint, graph, build) takes its rule options from
:func:`settings`, so `.mcpspec.yaml` / `[tool.mcpspec]` and the flags mean the
same thing everywhere.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from mcpspec.config import ConfigError, LintConfig, check_docs_url, find_config, load_config
from mcpspec.rules.base import DEFAULT_DOCS_URL
from mcpspec.rules.pipeline import LintOptions
from mcpspec.rules.registry import expand

_Spec = TypeVar("_Spec")
FAIL_ON = ("critical", "high", "medium", "low", "info", "never")
DEFAULT_FAIL_ON = "low"


@dataclass(frozen=True)
class Flags:
    """The command line's choices; an empty or None field leaves the config's.

    ``select`` and ``ignore`` take rule IDs, slugs or ID prefixes, comma-separated or not.
    """

    config: Path | None = None  # None: the config found upward from the spec's directory
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    fail_on: str | None = None
    no_inline_suppressions: bool = False
    baseline: Path | None = None
    docs_url: str | None = None


@dataclass(frozen=True)
class Settings:
    """Settings() are the built-in defaults: no config file, no flags."""

    config: LintConfig = field(default_factory=LintConfig)
    flags: Flags = field(default_factory=Flags)
    today: datetime.date = field(default_factory=datetime.date.today)

    @property
    def fail_on(self) -> str:
        """Lint's threshold: the flag, else the config, else ``low``."""
        return self.flags.fail_on or self.config.fail_on or DEFAULT_FAIL_ON

    @property
    def inline_suppressions(self) -> bool:
        return not (self.flags.no_inline_suppressions or self.config.no_inline_suppressions)

    @property
    def docs_url(self) -> str:
        """The folder URL of the rule pages: the flag, else the config, else the project's."""
        return self.flags.docs_url or self.config.docs_url or DEFAULT_DOCS_URL

    def baseline(self, writing: bool = False) -> Path | None:
        """The baseline file: the flag, else the config's; writing one defaults to ``.mcpspec-baseline.json``."""
        from mcpspec.rules.baseline import DEFAULT_BASELINE

        return self.flags.baseline or self.config.baseline or (Path(DEFAULT_BASELINE) if writing else None)

    def lint_options(self, file: str | Path) -> LintOptions:
        """The rules that run on ``file`` and how they are judged; ConfigError names an unknown rule."""
        wanted = _names(self.flags.select) or self.config.select
        try:
            per_file = _expand(self.config.ignored_for(str(file)))
        except ConfigError as exc:
            raise ConfigError(f"{self.config.path}: per-file-ignores: {exc}") from None
        return LintOptions(
            select=_expand(wanted) if wanted else None,
            ignore=_expand(_names(self.flags.ignore) + self.config.ignore) | per_file,
            severity={rule_id: level for name, level in self.config.severity.items() for rule_id in _expand([name])},
            inline_suppressions=self.inline_suppressions,
            today=self.today,
        )


def config_start(spec: str | os.PathLike[str] | None) -> Path:
    """Where the search for a spec's config begins: the spec's own directory (made absolute, so
    the search goes on above the working directory), or the working directory for standard input."""
    return Path(spec).absolute().parent if spec is not None else Path.cwd()


def settings(flags: Flags | None = None, start: Path | None = None) -> Settings:
    """Load the config (``flags.config``, else the nearest one at or above ``start``, default the
    working directory; the commands start from the spec's directory, :func:`config_start`) and check
    the flags; raises ConfigError for anything unusable."""
    chosen = flags if flags is not None else Flags()
    path = chosen.config if chosen.config is not None else find_config(start if start is not None else Path.cwd())
    if chosen.docs_url is not None:
        chosen = replace(chosen, docs_url=check_docs_url(chosen.docs_url))
    loaded = Settings(load_config(path), chosen)
    if chosen.fail_on is not None and chosen.fail_on not in FAIL_ON:
        raise ConfigError(f"--fail-on must be one of {', '.join(FAIL_ON)}")
    # An unknown rule in the flags or the config is an error before any work.
    loaded.lint_options("")
    for pattern in loaded.config.per_file_ignores:
        loaded.lint_options(pattern)
    return loaded


def _names(values: Sequence[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _expand(names: list[str]) -> set[str]:
    try:
        return expand(names)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def settings_per_spec(flags: Flags, specs: Sequence[_Spec]) -> list[tuple[Settings, list[_Spec]]]:
    """``specs`` grouped by the config each one gets (one group with ``flags.config``), each group
    with its settings, in the order the groups first appear; a spec that is not a file on disk
    (standard input) gets the working directory's config."""
    if flags.config is not None:
        return [(settings(flags), list(specs))]
    found: dict[Path | None, tuple[Settings, list[_Spec]]] = {}
    config_of: dict[Path, Path | None] = {}  # searched once per directory, not once per spec
    for spec in specs:
        start = config_start(spec if isinstance(spec, (str, os.PathLike)) else None)
        if start not in config_of:
            config_of[start] = find_config(start)
        path = config_of[start]
        if path not in found:
            found[path] = (settings(flags, start), [])
        found[path][1].append(spec)
    return list(found.values())
