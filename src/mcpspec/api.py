"""The Python API the CLI is a thin layer over.

``lint_files``, ``graph_file`` and ``build_file`` do what the commands of the same
name do; their options come from :func:`mcpspec.settings.settings` (the config
file under the command-line flags), the built-in defaults when none are given.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mcpspec.config import ConfigError
from mcpspec.diagnostics import Diagnostic, SpecError, SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.perf import gc_paused
from mcpspec.report.model import FileLint, LintReport
from mcpspec.rules.base import DEFAULT_DOCS_URL
from mcpspec.rules.pipeline import LintOptions
from mcpspec.settings import Settings
from mcpspec.source.discover import SpecText
from mcpspec.source.loader import load_bytes, load_file, parse_text
from mcpspec.source.sourcemap import SourceMap

if TYPE_CHECKING:
    from mcpspec.report.graph.view_model import GraphView
    from mcpspec.report.review.data import Review
    from mcpspec.targets.base import BuildOptions
    from mcpspec.targets.build import Build


def load(path: str | os.PathLike[str], display_name: str | None = None) -> Plan:
    """Parse, validate and resolve one spec file.

    Raises ``mcpspec.source.loader.UsageError`` when the file cannot be read
    and ``SpecError`` (with positioned diagnostics) when it is not a valid spec.
    """
    from mcpspec.run.lockfile import lock_state

    with gc_paused():
        data, source = load_file(path, display_name)
        plan = plan_from(data, source)
    # The lock beside the file, read once here so the rules that ask about it stay pure.
    return dataclasses.replace(plan, lock=lock_state(path))


def load_text(text: str, name: str = "<string>") -> Plan:
    """Like :func:`load`, for YAML text already in memory."""
    with gc_paused():
        data, source = parse_text(text, name)
        return plan_from(data, source)


def plan_from(data: Any, source: SourceMap) -> Plan:
    """Validate parsed data against the models and resolve it into a Plan."""
    from pydantic import ValidationError

    from mcpspec.ir.resolve import resolve
    from mcpspec.spec.errors import diagnostics_from
    from mcpspec.spec.models import Spec

    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        found = diagnostics_from(exc, data, Spec, source)
        raise SpecError(found + _reference_errors_despite(found, data, source)) from None
    return resolve(spec, source)


def _reference_errors_despite(found: list[Diagnostic], data: Any, source: SourceMap) -> list[Diagnostic]:
    """Resolution problems (an undefined secret, agent server or workspace dir) that a
    schema error would otherwise hide until it is fixed.

    Drops the optional keys the schema errors are about and, when what is left is a
    valid spec, resolves it. Nothing required is ever dropped, so no definition
    disappears and no reference is reported missing because of the pruning; problems
    at or around a dropped key are left to the schema error already reported there.
    """
    from pydantic import ValidationError

    from mcpspec.ir.resolve import resolve
    from mcpspec.spec.models import Spec

    dropped = [d.path for d in found]
    pruned = copy.deepcopy(data)
    for path in dropped:
        parent = _lookup(pruned, path[:-1])
        if not path or not isinstance(parent, dict) or not isinstance(path[-1], str):
            return []
        parent.pop(path[-1], None)
    try:
        resolve(Spec.model_validate(pruned), source)
    except ValidationError:
        return []
    except SpecError as exc:
        return [d for d in exc.diagnostics if not any(_related(d.path, path) for path in dropped)]
    return []


def _lookup(data: Any, path: SpecPath) -> Any:
    for segment in path:
        if isinstance(data, dict) and isinstance(segment, str):
            data = data.get(segment)
        elif isinstance(data, list) and isinstance(segment, int) and 0 <= segment < len(data):
            data = data[segment]
        else:
            return None
    return data


def _related(a: SpecPath, b: SpecPath) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def lint_file(path: str | os.PathLike[str] | SpecText, options: LintOptions, display_name: str | None = None) -> FileLint:
    """Lint one file (or a SpecText, such as standard input): spec errors become results;
    otherwise every enabled rule runs.

    Raises ``UsageError`` when the file cannot be read at all.
    """
    from mcpspec.rules.pipeline import lint_plan

    plan, errors = _text_plan_or_errors(path) if isinstance(path, SpecText) else load_or_errors(path, display_name)
    if plan is None:
        return errors
    with gc_paused():
        return FileLint(errors.file, lint_plan(plan, options), plan.source.text)


@dataclass(frozen=True)
class LintRun:
    """The findings of a lint run (the baseline applied) and the threshold that judges them."""

    report: LintReport
    fail_on: str
    baseline_written: Path | None = None  # set when the run wrote the baseline instead
    baseline_refused: bool = False  # --write-baseline on a spec with errors: nothing was written
    baseline_kept: int = 0  # entries of files this run did not check, kept in the written baseline

    @property
    def failed(self) -> bool:
        return self.baseline_written is None and self.report.fails(self.fail_on)


def lint_files(files: Sequence[str | os.PathLike[str] | SpecText], settings: Settings | None = None, write_baseline: bool = False) -> LintRun:
    """Lint files as ``mcpspec lint`` does; ``settings`` (default: the built-in ones) come from
    :func:`mcpspec.settings.settings`. With ``write_baseline`` the findings are written to the
    baseline file instead of judged: the entries of files not checked now are kept, and
    nothing is written when a file has spec errors (``LintRun.baseline_refused``).

    Raises ``UsageError`` for a file that cannot be read, ConfigError for an unknown rule in a
    per-file ignore and ``BaselineError`` for a baseline that cannot be read.
    """
    from mcpspec.output import write_atomically
    from mcpspec.rules import baseline as baselines

    chosen = settings if settings is not None else Settings()
    report = LintReport([lint_file(file, chosen.lint_options(spec_name(file)), display_name=spec_name(file)) for file in files])
    baseline = chosen.baseline(writing=write_baseline)
    if write_baseline:
        assert baseline is not None
        if any(result.severity == "error" for result in report.results):
            return LintRun(report, chosen.fail_on, baseline_refused=True)
        previous = baselines.load(baseline) if baseline.exists() else set()
        write_atomically(baseline, baselines.render(report, previous))
        return LintRun(report, chosen.fail_on, baseline, baseline_kept=len(baselines.kept(report, previous)))
    if baseline is not None:
        report = baselines.apply(report, baselines.load(baseline))
    return LintRun(report, chosen.fail_on)


def spec_name(file: str | os.PathLike[str] | SpecText) -> str:
    """The name a spec is reported under: its path as given, or a SpecText's name."""
    return file.name if isinstance(file, SpecText) else str(file)


def _text_plan_or_errors(spec: SpecText) -> tuple[Plan | None, FileLint]:
    """The plan of a spec read from elsewhere than a file (it has no lock beside it), or its errors."""
    from mcpspec.rules.engine import from_diagnostic

    try:
        with gc_paused():
            data, source = load_bytes(spec.data, spec.name)
            return plan_from(data, source), FileLint(spec.name, [])
    except SpecError as exc:
        return None, FileLint(spec.name, [from_diagnostic(d) for d in exc.diagnostics], spec.data.decode("utf-8", "replace"))


class GraphOutcome(NamedTuple):
    """The trust graph with the lint findings laid over it, or None and the spec errors in ``lint``."""

    view: GraphView | None
    lint: FileLint


def graph_file(
    path: str | os.PathLike[str], settings: Settings | None = None, display_name: str | None = None, keep_nodes: bool = True
) -> GraphOutcome:
    """The trust graph of one file, coloured by the findings lint reports with the same settings.

    ``keep_nodes=False`` releases the positions of the plan's YAML nodes once the findings are
    positioned (tens of MB at 10,000 servers); the plan's source then answers no position.

    Raises ``UsageError`` when the file cannot be read at all.
    """
    from mcpspec.report.graph.view_model import view
    from mcpspec.rules.graph._common import graph_of
    from mcpspec.rules.pipeline import lint_plan

    chosen = settings if settings is not None else Settings()
    plan, errors = load_or_errors(path, display_name)
    if plan is None:
        return GraphOutcome(None, errors)
    with gc_paused():
        results = lint_plan(plan, chosen.lint_options(errors.file))
        if not keep_nodes:
            plan.source.release_nodes()
        # The graph the graph rules built for lint (built now when none of them ran).
        return GraphOutcome(view(graph_of(plan), results), FileLint(errors.file, results, plan.source.text))


def load_or_errors(path: str | os.PathLike[str], display_name: str | None) -> tuple[Plan | None, FileLint]:
    """The plan, or None and the spec errors as results (the FileLint names the file either way)."""
    from mcpspec.rules.engine import from_diagnostic

    name = display_name if display_name is not None else str(path)
    try:
        return load(path, name), FileLint(name, [])
    except SpecError as exc:
        from mcpspec.importer.recognize import client_config_error  # only for a file that is no spec

        found = client_config_error(path, name)
        diagnostics = [found] if found is not None else exc.diagnostics
        return None, FileLint(name, [from_diagnostic(d) for d in diagnostics], _text_or_none(path))


class PlanOutcome(NamedTuple):
    """The resolved Plan as data (each value with the spec path that set it), or None and the spec errors in ``lint``."""

    data: dict[str, Any] | None
    lint: FileLint


def plan_file(path: str | os.PathLike[str], display_name: str | None = None) -> PlanOutcome:
    """The resolved Plan of one file as data (:mod:`mcpspec.report.plan_output`).

    Raises ``UsageError`` when the file cannot be read at all.
    """
    from mcpspec.report.plan_output import plan_data

    plan, errors = load_or_errors(path, display_name)
    if plan is None:
        return PlanOutcome(None, errors)
    return PlanOutcome(plan_data(plan), errors)


def _text_or_none(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


# A boundary the target cannot enforce (high) always stops a build: only a waiver accepts it.
BUILD_FAIL_ON = ("high", "medium", "low", "info")


class BuildOutcome(NamedTuple):
    """Every finding of a build and the build (None on spec errors)."""

    lint: FileLint
    build: Build | None
    target: str
    plan: Plan | None = None

    @property
    def stopped(self) -> bool:
        """Nothing is built: the spec has errors, or a finding at or above the build's ``fail_on`` counts."""
        return self.build is None or self.build.blocked


def build_file(
    path: str | os.PathLike[str],
    target: str,
    settings: Settings | None = None,
    fail_on: str = "high",
    display_name: str | None = None,
    build_options: BuildOptions | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> BuildOutcome:
    """Build one file for one target.

    The risk rules run as :func:`lint_files` runs them with ``settings`` (their select, ignore,
    severity and suppressions apply to the target's own TG002 and TG003 findings too; only a
    waiver accepts a TG001 or TG004); a finding at or above ``fail_on`` blocks the build
    (``BuildOutcome.stopped``), and a blocked build is never written. The config's fail-on is
    lint's, not the build's. ``build_options`` are build inputs that are not in the spec (a proxy
    image...); ``out_dir`` is where the build will be written (the client target's entries name its
    compose file there). Raises ``UsageError`` when the file cannot be read and ConfigError for an unknown
    target, ``fail_on``, or an option the target does not take.
    """
    from mcpspec.targets import get_target
    from mcpspec.targets.base import BuildOptions
    from mcpspec.targets.build import build_plan
    from mcpspec.targets.skeleton import refuse_unused

    chosen = settings if settings is not None else Settings()
    chosen_options = build_options if build_options is not None else BuildOptions()
    try:
        if "spec_path" in get_target(target).options and chosen_options.spec_path is None:  # the client target: `mcpspec run FILE`
            chosen_options = dataclasses.replace(chosen_options, spec_path=os.path.abspath(path))
        if "out_dir" in get_target(target).options and chosen_options.via != "run" and out_dir is not None and chosen_options.out_dir is None:  # the client target's compose file
            chosen_options = dataclasses.replace(chosen_options, out_dir=os.path.abspath(out_dir))
        refuse_unused(get_target(target), chosen_options)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if fail_on not in BUILD_FAIL_ON:
        raise ConfigError(f"--fail-on must be one of {', '.join(BUILD_FAIL_ON)}")
    plan, errors = load_or_errors(path, display_name)
    if plan is None:
        return BuildOutcome(errors, None, target)
    options = chosen.lint_options(errors.file)
    with gc_paused():
        build = build_plan(plan, target, today=chosen.today, inline_suppressions=options.inline_suppressions, lint=options, fail_on=fail_on, options=chosen_options)
    return BuildOutcome(FileLint(errors.file, build.findings, plan.source.text), build, target, plan)


def review_file(
    path: str | os.PathLike[str],
    settings: Settings | None = None,
    target: str | None = None,
    rule_docs_url: str = DEFAULT_DOCS_URL,
    within: tuple[str | os.PathLike[str], Plan] | None = None,
) -> tuple[Review, bool]:
    """The reviewer's report of one file (``mcpspec report``) and whether lint would fail it.

    The findings are exactly those :func:`lint_files` reports with ``settings`` (baseline
    applied); an invalid spec gives a report of its errors. Raises ``UsageError`` when the
    file cannot be read and ConfigError for an unknown ``target``. ``within`` (the boundary's
    name and plan) adds its excesses (``mcpspec check --within``).
    """
    from mcpspec.report.review.data import review
    from mcpspec.targets import TARGET_NAMES

    if target is not None and target not in TARGET_NAMES:
        raise ConfigError(f"unknown target {target!r}; choose from {', '.join(TARGET_NAMES)}")
    chosen = settings if settings is not None else Settings()
    name = str(path)
    plan, errors = load_or_errors(path, name)
    if plan is None:
        return review(errors, None, fail_on=chosen.fail_on, failed=True, today=chosen.today, target=target, rule_docs_url=rule_docs_url), True
    run = lint_files([path], chosen)
    with gc_paused():
        found = review(run.report.files[0], plan, fail_on=chosen.fail_on, failed=run.failed, today=chosen.today, target=target, rule_docs_url=rule_docs_url)
    if within is not None:
        from mcpspec.report.review.excesses import add_excesses

        add_excesses(found, plan, str(within[0]), within[1], run.report.files[0].text)
    return found, run.failed
