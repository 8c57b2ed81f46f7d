"""The ``mcpspec`` command line: parse arguments, call the API, choose the exit status.

Exit status: 0 clean, 1 findings at or above --fail-on (or spec errors), 2 usage,
config or internal error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from mcpspec import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
FORMATS = ("text", "json", "sarif", "github", "junit")
FAIL_ON = ("critical", "high", "medium", "low", "info", "never")
BUILD_FAIL_ON = ("high", "medium", "low", "info")

app = typer.Typer(
    name="mcpspec",
    help="Lint and compile MCP server sandbox policy (mcp-sandbox.yaml).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mcpspec {__version__}")
        raise typer.Exit(EXIT_CLEAN)


def _usage(message: str) -> NoReturn:
    typer.echo(f"mcpspec: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)] = False,
) -> None:
    """Lint and compile MCP server sandbox policy (mcp-sandbox.yaml)."""


def _names(values: list[str] | None) -> list[str]:
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]


if TYPE_CHECKING:
    from mcpspec.config import LintConfig
    from mcpspec.rules.pipeline import LintOptions


def _lint_options(settings: LintConfig, file: Path, select: list[str] | None = None, ignore: list[str] | None = None, no_inline: bool = False) -> LintOptions:
    """What lint runs on ``file``: the command line's choices over the config's (raises ValueError for an unknown rule)."""
    from mcpspec.rules.pipeline import LintOptions
    from mcpspec.rules.registry import expand

    wanted = _names(select) or settings.select
    try:
        per_file = expand(settings.ignored_for(str(file)))
    except ValueError as exc:
        raise ValueError(f"{settings.path}: per-file-ignores: {exc}") from None
    return LintOptions(
        select=expand(wanted) if wanted else None,
        ignore=expand(_names(ignore) + settings.ignore) | per_file,
        severity={rule_id: level for name, level in settings.severity.items() for rule_id in expand([name])},
        inline_suppressions=not (no_inline or settings.no_inline_suppressions),
    )


@app.command()
def lint(
    files: Annotated[list[Path], typer.Argument(help="Spec files to check.", show_default=False)],
    output_format: Annotated[list[str] | None, typer.Option("--format", "-f", help=f"Output format, repeatable: {', '.join(FORMATS)}.")] = None,
    output: Annotated[list[Path] | None, typer.Option("--output", "-o", help="File for the matching --format (in order); the rest go to stdout.")] = None,
    select: Annotated[list[str] | None, typer.Option(help="Only these rules (IDs, slugs or ID prefixes; comma-separated).")] = None,
    ignore: Annotated[list[str] | None, typer.Option(help="Skip these rules (IDs, slugs or ID prefixes; comma-separated).")] = None,
    fail_on: Annotated[str | None, typer.Option("--fail-on", help="Lowest severity that fails the run: critical, high, medium, low (default), info, never.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings fail the run.")] = False,
    no_inline_suppressions: Annotated[bool, typer.Option("--no-inline-suppressions", help="Ignore '# mcpspec: ignore[...]' comments.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Config file (default: .mcpspec.yaml or [tool.mcpspec] found upward).")] = None,
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Baseline file of accepted findings.")] = None,
    write_baseline: Annotated[bool, typer.Option("--write-baseline", help="Write the current findings to the baseline file and exit 0.")] = False,
) -> None:
    """Check spec files against the language and the risk rules."""
    from mcpspec import api
    from mcpspec.config import ConfigError, find_config, load_config
    from mcpspec.output import write_atomically
    from mcpspec.report.model import LintReport
    from mcpspec.rules import baseline as baselines
    from mcpspec.source.loader import UsageError

    formats = output_format or (["github"] if os.environ.get("GITHUB_ACTIONS") == "true" else ["text"])
    outputs = list(output or [])
    for name in formats:
        if name not in FORMATS:
            _usage(f"unknown format {name!r}; choose from {', '.join(FORMATS)}")
    if len(outputs) > len(formats):
        _usage("more --output files than --format options")
    if len(formats) - len(outputs) > 1:
        _usage("only one format can go to stdout; give an --output file for the others")
    try:
        settings = load_config(config if config is not None else find_config(Path.cwd()))
    except ConfigError as exc:
        _usage(str(exc))
    threshold = fail_on or settings.fail_on or "low"
    if threshold not in FAIL_ON:
        _usage(f"--fail-on must be one of {', '.join(FAIL_ON)}")
    baseline_path = baseline or settings.baseline or (Path(baselines.DEFAULT_BASELINE) if write_baseline else None)

    report_files = []
    for file in files:
        try:
            options = _lint_options(settings, file, select, ignore, no_inline_suppressions)
        except ValueError as exc:
            _usage(str(exc))
        try:
            report_files.append(api.lint_file(file, options, display_name=str(file)))
        except UsageError as exc:
            _usage(str(exc))
    report = LintReport(report_files)

    if write_baseline:
        assert baseline_path is not None
        write_atomically(baseline_path, baselines.render(report))
        typer.echo(f"wrote {len(report.active)} findings to {baseline_path}", err=True)
        raise typer.Exit(EXIT_CLEAN)
    if baseline_path is not None:
        try:
            report = baselines.apply(report, baselines.load(baseline_path))
        except baselines.BaselineError as exc:
            _usage(str(exc))

    for position, name in enumerate(formats):
        text = _render(name, report)
        if position < len(outputs):
            write_atomically(outputs[position], text)
        else:
            sys.stdout.write(text)
    failed = report.fails(threshold) and not exit_zero
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_CLEAN)


def _render(name: str, report: object) -> str:
    from mcpspec.report import github, json_output, junit, sarif, text
    from mcpspec.report.model import LintReport

    assert isinstance(report, LintReport)
    if name == "json":
        return json_output.render(report)
    if name == "sarif":
        return sarif.render(report)
    if name == "github":
        return github.render(report)
    if name == "junit":
        return junit.render(report)
    return text.render(report, colour=sys.stdout.isatty() and "NO_COLOR" not in os.environ)


@app.command()
def rules(
    output_format: Annotated[str, typer.Option("--format", "-f", help="text, json or markdown.")] = "text",
) -> None:
    """List every rule: ID, severity, slug and summary."""
    import json

    from mcpspec.rules.registry import all_rules

    catalog = all_rules()
    if output_format == "json":
        data = [{"id": r.id, "slug": r.slug, "category": r.category, "severity": r.severity, "summary": r.summary} for r in catalog]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif output_format == "markdown":
        from mcpspec.report.ruledocs import render_index

        sys.stdout.write(render_index(catalog))
    elif output_format == "text":
        for rule in catalog:
            typer.echo(f"{rule.id}  {rule.severity:<8}  {rule.slug:<40}  {rule.summary}")
    else:
        _usage("--format must be text, json or markdown")


@app.command()
def explain(rule: Annotated[str, typer.Argument(help="A rule ID or slug.", show_default=False)]) -> None:
    """Print one rule's documentation."""
    from mcpspec.report.ruledocs import render_rule
    from mcpspec.rules.registry import find

    found = find(rule)
    if found is None:
        _usage(f"no rule is named {rule!r} (see `mcpspec rules`)")
    sys.stdout.write(render_rule(found))


@app.command()
def schema() -> None:
    """Print the JSON Schema of mcp-sandbox.yaml."""
    from mcpspec.spec.schema import render_schema

    sys.stdout.write(render_schema())


GRAPH_FORMATS = ("dot", "mermaid", "json", "svg")


@app.command()
def build(
    file: Annotated[Path, typer.Argument(help="The spec file to compile.", show_default=False)],
    target: Annotated[str, typer.Option("--target", "-t", help="bwrap or systemd.", show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", help="Output directory (default: build/<target>).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 with a diff when the directory differs from the build.")] = False,
    fail_on: Annotated[str, typer.Option("--fail-on", help="Lowest severity of a finding (a risk rule's or the target's) that stops the build: high (default), medium, low, info.")] = "high",
    no_inline_suppressions: Annotated[bool, typer.Option("--no-inline-suppressions", help="Ignore '# mcpspec: ignore[...]' comments.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Config file for the risk rules (default: .mcpspec.yaml or [tool.mcpspec] found upward).")] = None,
) -> None:
    """Compile a spec into a target's artifacts (only when every boundary it asks for can be enforced
    and no risk rule finds something at or above --fail-on, unless waived)."""
    from mcpspec import api
    from mcpspec.config import ConfigError, find_config, load_config
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.source.loader import UsageError
    from mcpspec.targets import TARGET_NAMES
    from mcpspec.targets.writer import OutputError, drift, write_build

    if target not in TARGET_NAMES:
        _usage(f"unknown target {target!r}; choose from {', '.join(TARGET_NAMES)}")
    # A boundary the target cannot enforce (high) always stops the build: only a waiver accepts it.
    if fail_on not in BUILD_FAIL_ON:
        _usage(f"--fail-on must be one of {', '.join(BUILD_FAIL_ON)}")
    try:
        options = _lint_options(load_config(config if config is not None else find_config(Path.cwd())), file, no_inline=no_inline_suppressions)
    except (ConfigError, ValueError) as exc:
        _usage(str(exc))
    try:
        found, built = api.build_file(
            file, target, display_name=str(file), inline_suppressions=not no_inline_suppressions, options=options, fail_on=fail_on
        )
    except UsageError as exc:
        _usage(str(exc))
    report = LintReport([found])
    if report.active:
        sys.stderr.write(text.render(report, colour=sys.stderr.isatty() and "NO_COLOR" not in os.environ))
    if built is None or built.blocked:
        typer.echo(f"mcpspec: nothing built for {target}: the findings above stop the build", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    directory = out if out is not None else Path("build") / target
    if built.elsewhere:
        typer.echo(f"not built (placement: external, they run elsewhere): {', '.join(built.elsewhere)}", err=True)
    if check:
        difference = drift(directory, built)
        if difference:
            sys.stdout.write(difference)
            typer.echo(f"mcpspec: {directory} differs from a fresh {target} build of {file}", err=True)
            raise typer.Exit(EXIT_FINDINGS)
        typer.echo(f"{directory} is up to date ({len(built.files)} files)", err=True)
        raise typer.Exit(EXIT_CLEAN)
    try:
        written, removed = write_build(directory, built)
    except OutputError as exc:
        _usage(str(exc))
    note = f", removed {len(removed)} stale" if removed else ""
    typer.echo(f"built {len(built.files)} files for {target} in {directory} ({len(written)} changed{note})", err=True)
    raise typer.Exit(EXIT_CLEAN)


@app.command()
def graph(
    file: Annotated[Path, typer.Argument(help="The spec file to draw.", show_default=False)],
    output_format: Annotated[str, typer.Option("--format", "-f", help=f"Output format: {', '.join(GRAPH_FORMATS)}.")] = "dot",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Config file (default: .mcpspec.yaml or [tool.mcpspec] found upward).")] = None,
) -> None:
    """Draw the trust graph: servers, tools, secrets, host paths, destinations and agents.

    Nodes are coloured by the worst finding that involves them (the findings
    `mcpspec lint` reports with the same config) and attack paths of the graph
    rules are drawn in red. json adds the findings per node and each server's
    blast radius; svg runs Graphviz's `dot`.
    """
    from mcpspec import api
    from mcpspec.analysis.graph import build
    from mcpspec.config import ConfigError, find_config, load_config
    from mcpspec.diagnostics import SpecError
    from mcpspec.perf import gc_paused
    from mcpspec.report import graph_render
    from mcpspec.report import text as text_report
    from mcpspec.report.model import FileLint, LintReport
    from mcpspec.rules.engine import from_diagnostic
    from mcpspec.rules.pipeline import lint_plan
    from mcpspec.source.loader import UsageError

    if output_format not in GRAPH_FORMATS:
        _usage(f"unknown format {output_format!r}; choose from {', '.join(GRAPH_FORMATS)}")
    try:
        options = _lint_options(load_config(config if config is not None else find_config(Path.cwd())), file)
    except (ConfigError, ValueError) as exc:
        _usage(str(exc))
    try:
        plan = api.load(file, str(file))
    except UsageError as exc:
        _usage(str(exc))
    except SpecError as exc:
        try:
            source_text: str | None = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source_text = None
        report = LintReport([FileLint(str(file), [from_diagnostic(d) for d in exc.diagnostics], source_text)])
        sys.stderr.write(text_report.render(report))
        raise typer.Exit(EXIT_FINDINGS) from None
    try:
        with gc_paused():
            rendered = graph_render.render(graph_render.view(build(plan), lint_plan(plan, options)), output_format)
    except (graph_render.GraphvizMissing, graph_render.GraphvizFailed) as exc:
        _usage(str(exc))
    _emit(rendered, output)


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="The spec file to resolve.", show_default=False)],
    output_format: Annotated[str, typer.Option("--format", "-f", help="json or yaml.")] = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Config file (checked; the plan does not depend on it).")] = None,
) -> None:
    """Print the resolved plan: every value a target or rule reads, with the spec path
    that set it (or `default`)."""
    from mcpspec import api
    from mcpspec.config import ConfigError, find_config, load_config
    from mcpspec.report import plan_output
    from mcpspec.report import text as text_report
    from mcpspec.report.model import LintReport
    from mcpspec.source.loader import UsageError

    if output_format not in plan_output.FORMATS:
        _usage(f"unknown format {output_format!r}; choose from {', '.join(plan_output.FORMATS)}")
    try:
        load_config(config if config is not None else find_config(Path.cwd()))
        data, errors = api.plan_file(file, str(file))
    except (ConfigError, UsageError) as exc:
        _usage(str(exc))
    if data is None:
        sys.stderr.write(text_report.render(LintReport([errors])))
        raise typer.Exit(EXIT_FINDINGS)
    rendered = plan_output.render(data, output_format)
    _emit(rendered, output)


def _emit(text: str, output: Path | None) -> None:
    """Write ``text`` to stdout, or atomically to ``output``."""
    from mcpspec.output import write_atomically

    if output is None:
        sys.stdout.write(text)
        return
    try:
        write_atomically(output, text)
    except OSError as exc:
        _usage(f"cannot write {output}: {exc.strerror or exc}")


def _internal_error(exc: BaseException) -> NoReturn:
    if os.environ.get("MCPSPEC_DEBUG"):
        raise exc
    typer.echo(f"mcpspec: internal error: {type(exc).__name__}: {exc}", err=True)
    typer.echo("This is a bug in mcpspec; rerun with MCPSPEC_DEBUG=1 for details and report it.", err=True)
    _exit_now(EXIT_USAGE)


def run() -> None:
    """Run the app; turn anything unexpected into exit status 2 without a traceback."""
    try:
        app(prog_name="mcpspec")
    except SystemExit as exc:
        _exit_now(exc.code)
    except KeyboardInterrupt:
        _exit_now(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        _internal_error(exc)


def _exit_now(code: object) -> NoReturn:
    """Exit without tearing down the interpreter's objects one by one.

    After linting a 10,000-server spec, freeing the Plan and the node graph
    object by object takes longer than a tenth of the whole run; the process
    is ending, so let the operating system reclaim the memory at once.
    """
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = EXIT_FINDINGS
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else EXIT_CLEAN)
