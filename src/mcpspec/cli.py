"""The ``mcpspec`` command line: parse arguments, call the API, choose the exit status.

Exit status: 0 clean, 1 findings at or above --fail-on (or spec errors), 2 usage,
config or internal error.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from mcpspec import __version__
from mcpspec.helpformat import App
from mcpspec.report.renderers import GRAPH_FORMATS, LINT_FORMATS, PLAN_FORMATS
from mcpspec.targets import TARGET_NAMES

if TYPE_CHECKING:
    from mcpspec.api import LintRun
    from mcpspec.ir.plan import Plan
    from mcpspec.settings import Flags, Settings
    from mcpspec.source.discover import SpecText

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
# A client config starts each server under `mcpspec run` (or a compose service): what it
# enforces is that sandbox's, so report and diff ask for that target instead.
CLIENT_TARGET_NOTE = "--target client: a client config starts each server under `mcpspec run` (bwrap's sandbox) or a compose service; give --target bwrap or compose"
# --max-chars below this leaves no room for a Markdown report's head and its truncation note.
MIN_COMMENT_CHARS = 2_000
WITHIN_HELP = "The boundary: a spec file whose values are ceilings (default: the config's within:, if any); its excesses are shown (docs/boundary.md)."
CONFIG_HELP = "Config file (default: .mcpspec.yaml or [tool.mcpspec] found upward)."

app = App(
    name="mcpspec",
    help="Lint and compile MCP server sandbox policy (mcp-sandbox.yaml).",
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
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


# Commands that read, compute and exit (through os._exit): the cyclic collector's passes over a
# 10,000-server Plan cost more than the garbage they could free. Long-running commands keep it.
_BATCH_COMMANDS = frozenset({"lint", "graph", "build", "plan", "diff", "report", "check"})


@app.callback()
def main_options(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)] = False,
) -> None:
    """Lint and compile MCP server sandbox policy (mcp-sandbox.yaml)."""
    if ctx.invoked_subcommand not in _BATCH_COMMANDS:
        gc.enable()  # off during start-up (mcpspec.__main__)
        return
    gc.disable()
    # Pydantic looks for plugins in every installed distribution's entry points when the spec
    # models are created (a tenth of a small lint's time); none may watch a spec being read.
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"


def _usage_errors() -> tuple[type[Exception], ...]:
    """What the API raises for a choice or a file the user must fix: exit status 2."""
    from mcpspec.config import ConfigError
    from mcpspec.report.graph import GraphvizFailed, GraphvizMissing
    from mcpspec.report.renderers import UnknownFormat
    from mcpspec.rules.baseline import BaselineError
    from mcpspec.source.loader import UsageError
    from mcpspec.targets.writer import OutputError

    return (ConfigError, UsageError, UnknownFormat, BaselineError, OutputError, GraphvizMissing, GraphvizFailed)


def _needs_run_extra(command: str) -> None:
    """Stop with one line when the MCP SDK, which only `run` and `lock` use, is not installed."""
    import importlib

    try:
        importlib.import_module("mcp")
    except ImportError:
        _usage(f"`mcpspec {command}` needs the MCP SDK, which a lint-only install leaves out: pip install 'mcpspec[run]'")


def _settings(flags: Flags, spec: Path | None) -> Settings:
    """The settings of a command on ``spec``: its config is looked for from the spec's directory up
    (from the working directory when there is no spec file)."""
    from mcpspec.config import ConfigError
    from mcpspec.settings import config_start, settings

    try:
        return settings(flags, config_start(spec))
    except ConfigError as exc:
        _usage(str(exc))


def _settings_per_spec(flags: Flags, specs: list[Path | SpecText]) -> list[tuple[Settings, list[Path | SpecText]]]:
    from mcpspec.config import ConfigError
    from mcpspec.settings import settings_per_spec

    try:
        return settings_per_spec(flags, specs)
    except ConfigError as exc:
        _usage(str(exc))


def _boundary(within: Path | None, chosen: Settings, required: bool) -> tuple[Path, Plan] | None:
    """The boundary plan ``--within`` names, else the config's ``within:``; None when neither does
    (a usage error when ``required``). A boundary that is not a valid spec exits 2 with its errors."""
    from mcpspec import api
    from mcpspec.report import text
    from mcpspec.report.model import LintReport

    path = within if within is not None else chosen.config.within
    if path is None:
        if required:
            _usage("give the boundary: --within BOUNDARY.yaml, or `within:` in the config")
        return None
    try:
        plan, lint = api.load_or_errors(path, None)
    except _usage_errors() as exc:
        _usage(str(exc))
    if plan is None:
        sys.stderr.write(text.render(LintReport([lint])))
        raise typer.Exit(EXIT_USAGE)
    return path, plan


def _colour(stream: object) -> bool:
    from mcpspec.colour import colour_wanted

    return colour_wanted("auto", stream, os.environ)


@app.command()
def lint(
    files: Annotated[list[Path], typer.Argument(metavar="PATH", help="Spec files, directories to search for them (mcp-sandbox*.yaml, *.mcp-sandbox.yaml), or - for standard input.", show_default=False)],
    output_format: Annotated[list[str] | None, typer.Option("--format", "-f", metavar="FORMAT", help=f"Output format, repeatable: {', '.join(LINT_FORMATS)}.")] = None,
    output: Annotated[list[Path] | None, typer.Option("--output", "-o", metavar="FILE", help="File for the matching --format (in order); the rest go to stdout. When every format goes to a file, stdout gets the one-line summary.")] = None,
    select: Annotated[list[str] | None, typer.Option(metavar="RULES", help="Only these rules (IDs, slugs or ID prefixes; comma-separated).")] = None,
    ignore: Annotated[list[str] | None, typer.Option(metavar="RULES", help="Skip these rules (IDs, slugs or ID prefixes; comma-separated).")] = None,
    fail_on: Annotated[str | None, typer.Option("--fail-on", metavar="LEVEL", help="Lowest severity that fails the run: critical, high, medium, low (default), info, never.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings fail the run.")] = False,
    no_inline_suppressions: Annotated[bool, typer.Option("--no-inline-suppressions", help="Ignore '# mcpspec: ignore[...]' comments.")] = False,
    config: Annotated[Path | None, typer.Option("--config", metavar="FILE", help=CONFIG_HELP)] = None,
    baseline: Annotated[Path | None, typer.Option("--baseline", metavar="FILE", help="Baseline file of accepted findings.")] = None,
    write_baseline: Annotated[bool, typer.Option("--write-baseline", help="Write the current findings to the baseline file and exit 0 (refused, exit 1, when a spec has errors).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print the findings only: no summary line.")] = False,
    color: Annotated[str, typer.Option("--color", metavar="WHEN", help="Colour the text output: auto (a terminal, unless NO_COLOR is set; or FORCE_COLOR is set), always, never.")] = "auto",
    statistics: Annotated[bool, typer.Option("--statistics", help="Print the number of findings per rule instead of the findings.")] = False,
    docs_url: Annotated[str | None, typer.Option("--docs-url", metavar="URL", help="Folder URL of the rule pages that SARIF's helpUri links (default: the config's docs-url, else https://mcpspec.dev/docs/rules/).")] = None,
) -> None:
    """Check spec files against the language and the risk rules."""
    from dataclasses import replace

    from mcpspec import api
    from mcpspec.colour import colour_wanted
    from mcpspec.output import write_atomically
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.report.renderers import UnknownFormat, lint_renderer
    from mcpspec.settings import Flags

    formats = output_format or (["github"] if os.environ.get("GITHUB_ACTIONS") == "true" else ["text"])
    outputs = list(output or [])
    inputs = _lint_inputs(files)
    groups = _settings_per_spec(Flags(config, select or (), ignore or (), fail_on, no_inline_suppressions, baseline, docs_url), inputs)
    chosen = groups[0][0]
    try:
        renderers = [lint_renderer(name, chosen.docs_url) for name in formats]
        colour = colour_wanted(color, sys.stdout, os.environ)
    except (UnknownFormat, ValueError) as exc:
        _usage(str(exc))
    if len(outputs) > len(formats):
        _usage("more --output files than --format options")
    if len(formats) - len(outputs) > 1:
        _usage("only one format can go to stdout; give an --output file for the others")
    on_stdout = formats[-1] if len(formats) > len(outputs) else None
    if statistics and on_stdout not in (None, "text"):
        _usage(f"--statistics prints text; write the {on_stdout} output to a file with --output")
    if write_baseline and len(groups) > 1:
        _usage(f"these files are under {len(groups)} different configs, each with its own baseline: write each baseline in a run of its own")
    try:
        runs = [api.lint_files(group, settings, write_baseline=write_baseline) for settings, group in groups]
    except _usage_errors() as exc:
        _usage(str(exc))
    run = runs[0] if len(runs) == 1 else _merged(runs, inputs)
    if run.baseline_refused:
        errors = LintReport([replace(item, results=[r for r in item.results if r.severity == "error"]) for item in run.report.files])
        sys.stdout.write(text.render(errors, colour))
        typer.echo(f"mcpspec: error: not writing the baseline: fix the spec errors first (nothing written to {chosen.baseline(writing=True)})", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    if run.baseline_written is not None:
        kept = f" (kept {run.baseline_kept} of files not checked now)" if run.baseline_kept else ""
        typer.echo(f"wrote {len(run.report.active)} findings to {run.baseline_written}{kept}", err=True)
        raise typer.Exit(EXIT_CLEAN)
    for position, render in enumerate(renderers[: len(outputs)]):
        try:
            write_atomically(outputs[position], render(run.report, False))
        except OSError as exc:
            _usage(f"cannot write {outputs[position]}: {exc.strerror or exc}")
    if on_stdout in (None, "text"):
        shown = [text.statistics(run.report)] if statistics else text.finding_texts(run.report, colour) if on_stdout == "text" else []
        sys.stdout.writelines(shown)
        if not quiet:
            sys.stdout.write(text.summary(run.report) + "\n")
    else:
        sys.stdout.write(renderers[-1](run.report, colour))
    failed = any(each.failed for each in runs)  # each group judged by its own config's fail-on
    raise typer.Exit(EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN)


def _merged(runs: list[LintRun], inputs: list[Path | SpecText]) -> LintRun:
    """The runs of several config groups as one, the files in the order they were given."""
    from dataclasses import replace

    from mcpspec.api import spec_name
    from mcpspec.report.model import LintReport

    position = {spec_name(spec): index for index, spec in reversed(list(enumerate(inputs)))}
    files = sorted((item for each in runs for item in each.report.files), key=lambda item: position.get(item.file, len(position)))
    return replace(runs[0], report=LintReport(files), baseline_refused=any(each.baseline_refused for each in runs))


def _lint_inputs(arguments: list[Path]) -> list[Path | SpecText]:
    """The files to lint: directories walked for spec files, ``-`` read from standard input."""
    from mcpspec.source.discover import STDIN_ARGUMENT, STDIN_NAME, SpecText, expand
    from mcpspec.source.loader import UsageError

    try:
        found = expand(arguments)
    except UsageError as exc:
        _usage(str(exc))
    return [SpecText(STDIN_NAME, sys.stdin.buffer.read()) if str(path) == STDIN_ARGUMENT else path for path in found]


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
def explain(rule: Annotated[str, typer.Argument(help="A rule ID or slug, an egress preset (@metadata), or @ for every preset.", show_default=False)]) -> None:
    """Print one rule's documentation, or the destinations of an egress preset."""
    if rule.startswith("@"):
        from mcpspec import presets

        preset = presets.find(rule)
        if rule != "@" and preset is None:
            try:
                presets.parse_preset(rule)
            except ValueError as exc:
                _usage(str(exc))
        sys.stdout.write(presets.explain_all() if preset is None else presets.explain(preset))
        return
    from mcpspec.report.ruledocs import render_rule
    from mcpspec.rules.registry import find

    found = find(rule)
    if found is None:
        from mcpspec.boundary.check import KINDS

        excess = next(((code, slug, summary) for code, (slug, summary) in KINDS.items() if rule in (code, code.lower(), slug)), None)
        if excess is not None:
            code, slug, summary = excess
            sys.stdout.write(f"{code} {slug}\n\n`mcpspec check --within BOUNDARY` reports {summary}, at the spec value that allows it,\nwith one concrete counterexample (docs/boundary.md lists what each spec value is compared with).\n")
            return
        _usage(f"no rule is named {rule!r} (see `mcpspec rules`; `mcpspec explain @` lists the egress presets)")
    sys.stdout.write(render_rule(found))


@app.command()
def schema() -> None:
    """Print the JSON Schema of mcp-sandbox.yaml."""
    from mcpspec.spec.schema import render_schema

    sys.stdout.write(render_schema())


@app.command()
def build(
    file: Annotated[Path, typer.Argument(help="The spec file to compile.", show_default=False)],
    target: Annotated[str, typer.Option("--target", "-t", help=f"The target to build for: {', '.join(TARGET_NAMES)}.", show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", help="Output directory (default: build/<target>).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 with a diff when the directory differs from the build.")] = False,
    fail_on: Annotated[str, typer.Option("--fail-on", help="Lowest severity of a finding (a risk rule's or the target's) that stops the build: high (default), medium, low, info.")] = "high",
    no_inline_suppressions: Annotated[bool, typer.Option("--no-inline-suppressions", help="Ignore '# mcpspec: ignore[...]' comments.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP + " Its fail-on is lint's, not the build's.")] = None,
    proxy_image: Annotated[str | None, typer.Option("--proxy-image", help="Container targets: the egress proxy's image, pinned by digest (NAME@sha256:...).")] = None,
    egress: Annotated[str, typer.Option("--egress", help="k8s: how an allowlist by name is enforced: proxy (default) or cilium (toFQDNs).")] = "proxy",
    secret_store: Annotated[str | None, typer.Option("--secret-store", help="k8s: the external-secrets SecretStore that vault secrets come from.")] = None,
    pod_pids_limit: Annotated[int | None, typer.Option("--pod-pids-limit", min=1, help="k8s: the podPidsLimit of the nodes' kubelets, which bounds a pod's processes (a pod spec cannot).")] = None,
    seccomp_localhost: Annotated[str | None, typer.Option("--seccomp-localhost", help="k8s: the directory under the kubelet's seccomp root where the nodes hold this build's seccomp/<server>.json profiles; pods then use them (Localhost) instead of RuntimeDefault.")] = None,
    client: Annotated[str | None, typer.Option("--client", help="client: the MCP client whose config to write: claude-desktop, claude-code, vscode, cursor, codex.")] = None,
    via: Annotated[str, typer.Option("--via", help="client: what each entry starts: run (`mcpspec run`, the bwrap sandbox; default), docker-compose or podman-compose (a compose build written under OUT/compose), or srt (vscode: the server itself under VS Code's sandbox, sandboxEnabled).")] = "run",
    sandbox: Annotated[str | None, typer.Option("--sandbox", help="cedar: the target (bwrap, systemd, compose, k8s) whose build, written under OUT/<target>, starts the servers the gateway fronts.")] = None,
) -> None:
    """Compile a spec into a target's artifacts (only when every boundary it asks for can be enforced
    and no risk rule finds something at or above --fail-on, unless waived)."""
    from mcpspec import api
    from mcpspec.report import build_summary
    from mcpspec.settings import Flags
    from mcpspec.targets.base import BuildOptions
    from mcpspec.targets.writer import drift, write_build

    chosen = _settings(Flags(config, no_inline_suppressions=no_inline_suppressions), file)
    if egress not in ("proxy", "cilium"):
        _usage("--egress must be proxy or cilium")
    if via not in ("run", "docker-compose", "podman-compose", "srt"):
        _usage("--via must be one of run, docker-compose, podman-compose, srt")
    directory = out if out is not None else Path("build") / target
    try:
        options = BuildOptions(
            proxy_image=proxy_image, egress="cilium" if egress == "cilium" else "proxy", secret_store=secret_store, pod_pids_limit=pod_pids_limit, client=client,
            seccomp_localhost=seccomp_localhost, sandbox=sandbox,
            via="docker-compose" if via == "docker-compose" else "podman-compose" if via == "podman-compose" else "srt" if via == "srt" else "run",
        )
    except ValueError as exc:
        _usage(str(exc))
    try:
        outcome = api.build_file(file, target, chosen, fail_on=fail_on, display_name=str(file), build_options=options, out_dir=directory)
    except _usage_errors() as exc:
        _usage(str(exc))
    sys.stderr.write(build_summary.render(outcome, colour=_colour(sys.stderr)))
    if outcome.stopped or outcome.build is None:
        raise typer.Exit(EXIT_FINDINGS)
    built = outcome.build
    if check:
        difference = drift(directory, built)
        if difference:
            sys.stdout.write(difference)
            typer.echo(f"mcpspec: {directory} differs from a fresh {target} build of {file}", err=True)
            raise typer.Exit(EXIT_FINDINGS)
        typer.echo(f"{directory} is up to date ({len(built.files)} files)", err=True)
        raise typer.Exit(EXIT_CLEAN)
    try:
        written, removed, kept = write_build(directory, built)
    except _usage_errors() as exc:
        _usage(str(exc))
    note = f", removed {len(removed)} stale" if removed else ""
    typer.echo(f"built {len(built.files)} files for {target} in {directory} ({len(written)} changed{note})", err=True)
    for name in kept:
        typer.echo(f"kept {directory / name}: an earlier build wrote it, and it is not what that build wrote (edited since, unreadable, or no digest recorded); remove it yourself if it is not needed", err=True)
    raise typer.Exit(EXIT_CLEAN)


@app.command()
def lock(
    file: Annotated[Path, typer.Argument(help="The spec file whose servers to lock.", show_default=False)],
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to lock (default: every server that runs here and lists tools); the lock keeps the others' pins.", show_default=False)] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 when the servers offer anything other than the lock pins.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each server has to start and list its tools.")] = 30.0,
    accept: Annotated[list[str] | None, typer.Option("--accept", help="Accept a reviewed tool-poisoning finding, as RULE:SERVER/ITEM (TP003:github/create_issue); recorded in the lock. Repeatable.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Start each server in its bubblewrap sandbox and pin what it offers in mcp-sandbox.lock.

    What the servers offer is checked for tool poisoning (rules TP001-TP010, offline).
    Exit status: 0 locked (or, with --check, the lock matches), 1 with --check when the
    servers offer something else, or when a critical or high tool-poisoning finding is not
    accepted (nothing is written), 2 when a server does not start or answer, the spec has
    errors, or the lock cannot be read (the previous lock is then left as it was).
    Needs the run extra: pip install 'mcpspec[run]'.
    """
    _needs_run_extra("lock")
    from mcpspec import api
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.run import lock as locking
    from mcpspec.run.lockfile import LOCK_NAME, LockError
    from mcpspec.settings import Flags

    if not timeout > 0:
        _usage("--timeout must be a positive number of seconds")
    from mcpspec.poisoning.context import parse_accept

    try:
        accepts = [parse_accept(text) for text in accept or ()]
    except ValueError as exc:
        _usage(f"--accept {exc}")
    chosen = _settings(Flags(config), file)
    try:
        plan, errors = api.load_or_errors(file, str(file))
    except _usage_errors() as exc:
        _usage(str(exc))
    if plan is None:
        sys.stderr.write(text.render(LintReport([errors])))
        raise typer.Exit(EXIT_USAGE)
    try:
        outcome = locking.lock_spec(file, plan, servers or (), chosen, timeout, check, accepts)
    except locking.LockFailure as exc:
        _usage(exc.located(plan))
    except LockError as exc:
        _usage(str(exc))
    except OSError as exc:
        _usage(f"cannot write the lock beside {file}: {exc.strerror or exc}")
    sys.stderr.write(locking.warnings(outcome))
    sys.stdout.write(locking.summary(outcome, str(file.parent / LOCK_NAME), check))
    raise typer.Exit(EXIT_FINDINGS if (check and outcome.differs) or outcome.screening.blocking else EXIT_CLEAN)


@app.command()
def init(
    servers: Annotated[list[str] | None, typer.Option("--server", "-s", help="A catalog server to include (repeatable; default: filesystem). See --list.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to write.")] = Path("mcp-sandbox.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    project: Annotated[str | None, typer.Option("--project", help="Project name (default: the output directory's name).")] = None,
    list_servers: Annotated[bool, typer.Option("--list", help="List the catalog's servers and exit.")] = False,
) -> None:
    """Write a commented starter mcp-sandbox.yaml for this project from the built-in catalog,
    and beside it mcp-sandbox.schema.json, the schema its editor modeline names.

    Every choice a person must check is marked `# REVIEW:`. Exit status: 0 written, 2 when the
    file exists (without --force) or a server is not in the catalog.
    """
    from mcpspec.catalog import entries
    from mcpspec.init import InitError, write_schema_beside, write_starter

    if list_servers:
        for entry in entries():
            typer.echo(f"{entry.name:<12} {entry.package.registry}:{entry.package.name}@{entry.package.version}  {entry.description}")
        return
    try:
        write_starter(output, servers or (), force=force, project=project)
        schema = write_schema_beside(output, force=force)
    except (InitError, OSError) as exc:
        _usage(str(exc))
    typer.echo(f"wrote {output}: review the lines marked REVIEW, then run `mcpspec lint {output}`")
    typer.echo(schema)


@app.command()
def graph(
    file: Annotated[Path, typer.Argument(help="The spec file to draw.", show_default=False)],
    output_format: Annotated[str, typer.Option("--format", "-f", help=f"Output format: {', '.join(GRAPH_FORMATS)}.")] = "dot",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Draw the trust graph: servers, tools, secrets, host paths, destinations and agents.

    Nodes are coloured by the worst finding that involves them (the findings
    `mcpspec lint` reports with the same config) and attack paths of the graph
    rules are drawn in red. json adds the findings per node and each server's
    blast radius; svg runs Graphviz's `dot`.
    """
    from mcpspec import api
    from mcpspec.perf import gc_paused
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.report.renderers import graph_renderer
    from mcpspec.settings import Flags

    try:
        render = graph_renderer(output_format)
        shown, found = api.graph_file(file, _settings(Flags(config), file), display_name=str(file), keep_nodes=False)
    except _usage_errors() as exc:
        _usage(str(exc))
    if shown is None:
        sys.stderr.write(text.render(LintReport([found])))
        raise typer.Exit(EXIT_FINDINGS)
    if output_format == "json":  # written in pieces as it is encoded: never the whole document at once
        from mcpspec.report.graph.json_graph import json_chunks

        _emit(json_chunks(shown), output, "the json trust graph")
        return
    try:
        with gc_paused():
            rendered = render(shown)
    except _usage_errors() as exc:
        _usage(str(exc))
    _emit(rendered, output, f"the {output_format} trust graph")


@app.command()
def report(
    file: Annotated[Path, typer.Argument(help="The spec file to report on.", show_default=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically); its suffix (.html, .md) chooses the format.")] = None,
    output_format: Annotated[str | None, typer.Option("--format", "-f", help="html or markdown (default: from the --output suffix, else html).")] = None,
    target: Annotated[str | None, typer.Option("--target", "-t", help=f"Also show what this target enforces for each server: {', '.join(TARGET_NAMES)}.")] = None,
    docs_url: Annotated[str | None, typer.Option("--docs-url", metavar="URL", help="Folder URL of the rule pages that findings link, as lint's SARIF helpUri (default: the config's docs-url, else https://mcpspec.dev/docs/rules/).")] = None,
    max_chars: Annotated[int | None, typer.Option("--max-chars", min=MIN_COMMENT_CHARS, metavar="N", help="Markdown only: at most N characters (default 65000; GitHub's comment limit is 65536).")] = None,
    fail_on: Annotated[str | None, typer.Option("--fail-on", help="Lowest severity that fails the run, as for lint.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings fail the run.")] = False,
    within: Annotated[Path | None, typer.Option("--within", "-w", metavar="BOUNDARY", help=WITHIN_HELP)] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Write the reviewer's risk report: a self-contained HTML page or Markdown for a pull-request
    comment (summary and risk tiers, the trust picture, one card per server, every finding with its
    rule, waivers, with --target what that target enforces, and with a boundary its excesses).
    Exit status as for lint, and 1 for a boundary excess; the report is written either way (for an
    invalid spec it shows the errors)."""
    from mcpspec import api
    from mcpspec.report.review.formats import format_for, render_report
    from mcpspec.settings import Flags

    try:
        chosen_format = format_for(output_format, output)
    except ValueError as exc:
        _usage(str(exc))
    if max_chars is not None and chosen_format != "markdown":
        _usage("--max-chars applies to the markdown format")
    if target == "client":
        _usage(CLIENT_TARGET_NOTE)
    chosen = _settings(Flags(config, fail_on=fail_on, docs_url=docs_url), file)
    boundary = _boundary(within, chosen, required=False)
    try:
        found, failed = api.review_file(file, chosen, target=target, rule_docs_url=chosen.docs_url, within=boundary)
    except _usage_errors() as exc:
        _usage(str(exc))
    _emit(render_report(found, chosen_format, max_chars), output, f"the {chosen_format} report")
    if found.excesses and not exit_zero:
        typer.echo(f"mcpspec: exit 1: the report shows {len(found.excesses)} excess(es) over the boundary {found.boundary} (--exit-zero to exit 0)", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    if failed and not exit_zero:
        typer.echo(f"mcpspec: exit 1: the report shows findings at or above --fail-on {chosen.fail_on} (--exit-zero to exit 0)", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(EXIT_CLEAN)


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="The spec file to resolve.", show_default=False)],
    output_format: Annotated[str, typer.Option("--format", "-f", help=f"Output format: {', '.join(PLAN_FORMATS)}.")] = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP + " The plan does not depend on it.")] = None,
) -> None:
    """Print the resolved plan: every value a target or rule reads, with the spec path
    that set it (or `default`)."""
    from mcpspec import api
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.report.renderers import plan_renderer
    from mcpspec.settings import Flags

    try:
        render = plan_renderer(output_format)
        _settings(Flags(config), file)
        data, found = api.plan_file(file, display_name=str(file))
    except _usage_errors() as exc:
        _usage(str(exc))
    if data is None:
        sys.stderr.write(text.render(LintReport([found])))
        raise typer.Exit(EXIT_FINDINGS)
    _emit(render(data), output, f"the {output_format} plan")


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="The old version: a file or git:REV:PATH (git:HEAD~1:mcp-sandbox.yaml).", show_default=False)],
    new: Annotated[str, typer.Argument(help="The new version: a file or git:REV:PATH.", show_default=False)],
    target: Annotated[str | None, typer.Option("--target", "-t", help=f"Also report controls this target enforces less well: {', '.join(TARGET_NAMES)}.")] = None,
    output_format: Annotated[str, typer.Option("--format", "-f", help="text, markdown or json.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    fail_on_growth: Annotated[bool, typer.Option("--fail-on-growth", help="Exit 1 when a privilege grew or a lint finding is new (for a required check).")] = False,
    max_chars: Annotated[int | None, typer.Option("--max-chars", min=MIN_COMMENT_CHARS, metavar="N", help="Markdown only: at most N characters (default 65000; GitHub's comment limit is 65536).")] = None,
    within: Annotated[Path | None, typer.Option("--within", "-w", metavar="BOUNDARY", help=WITHIN_HELP)] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Compare the privileges two versions of a spec grant, server by server (resolved plans,
    not YAML text), and print one verdict line, lint's new and resolved findings counted apart
    (see docs/diff.md); with a boundary (--within or the config's within:), the excesses over it
    the change adds or removes.

    Exit status: 0, or 1 with --fail-on-growth when a privilege grew, a finding or an excess is
    new; 2 when a version or the boundary cannot be read or is not a valid spec."""
    from mcpspec.diff.render import FORMATS, RENDERERS
    from mcpspec.diff.run import diff_plans, load_side
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.settings import Flags

    if output_format not in FORMATS:
        _usage(f"--format must be one of {', '.join(FORMATS)}")
    if max_chars is not None and output_format != "markdown":
        _usage("--max-chars applies to the markdown format")
    if target is not None and target not in TARGET_NAMES:
        _usage(f"unknown target {target!r}; choose from {', '.join(TARGET_NAMES)}")
    if target == "client":
        _usage(CLIENT_TARGET_NOTE)
    chosen = _settings(Flags(config), None if new.startswith("git:") else Path(new))
    boundary = _boundary(within, chosen, required=False)
    try:
        sides = [load_side(old), load_side(new)]
    except _usage_errors() as exc:
        _usage(str(exc))
    broken = [side.lint for side in sides if side.plan is None]
    if broken:
        sys.stderr.write(text.render(LintReport(broken)))
        raise typer.Exit(EXIT_USAGE)
    before, after = sides[0].plan, sides[1].plan
    assert before is not None and after is not None
    try:
        found = diff_plans(before, after, chosen, target, (old, new), (str(boundary[0]), boundary[1]) if boundary is not None else None)
    except _usage_errors() as exc:
        _usage(str(exc))
    if max_chars is not None:
        from mcpspec.diff.render import markdown

        _emit(markdown(found, max_chars), output, f"the {output_format} diff")
    else:
        _emit(RENDERERS[output_format](found), output, f"the {output_format} diff")
    raise typer.Exit(EXIT_FINDINGS if fail_on_growth and found.grew else EXIT_CLEAN)


@app.command()
def check(
    files: Annotated[list[Path], typer.Argument(metavar="FILE...", help="The spec files to check.", show_default=False)],
    within: Annotated[Path | None, typer.Option("--within", "-w", metavar="BOUNDARY", help="The boundary: a spec file whose values are ceilings (default: the config's within).")] = None,
    output_format: Annotated[str, typer.Option("--format", "-f", help="text, json or sarif.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Prove specs stay within an organisation's boundary: compare the resolved plans server by
    server and print, for every excess, the spec value that allows it and one concrete request,
    mount or value the boundary does not allow (see docs/boundary.md).

    Exit status: 0 contained, 1 an excess, 2 a file that cannot be read or is not a valid spec."""
    from mcpspec import api
    from mcpspec.boundary.check import check as check_plans
    from mcpspec.boundary.render import FORMATS, RENDERERS
    from mcpspec.report import text
    from mcpspec.report.model import LintReport
    from mcpspec.settings import Flags

    if output_format not in FORMATS:
        _usage(f"--format must be one of {', '.join(FORMATS)}")
    boundary = within if within is not None else _settings(Flags(config), files[0]).config.within
    if boundary is None:
        _usage("give the boundary: --within BOUNDARY.yaml, or `within:` in the config")
    try:
        loaded = [api.load_or_errors(path, None) for path in (boundary, *files)]
    except _usage_errors() as exc:
        _usage(str(exc))
    broken = [lint for plan, lint in loaded if plan is None]
    if broken:
        sys.stderr.write(text.render(LintReport(broken)))
        raise typer.Exit(EXIT_USAGE)
    plans = [plan for plan, _ in loaded if plan is not None]
    limits, specs = plans[0], plans[1:]
    checked = [(spec, check_plans(spec, limits)) for spec in specs]
    _emit(RENDERERS[output_format](checked, str(boundary)), output, f"the {output_format} check")
    raise typer.Exit(EXIT_FINDINGS if any(found for _, found in checked) else EXIT_CLEAN)


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="The spec file whose sandboxes to check.", show_default=False)],
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to check (default: every server with a launcher).", show_default=False)] = None,
    target: Annotated[str, typer.Option("--target", "-t", help="The sandbox to check: bwrap.")] = "bwrap",
    build_dir: Annotated[Path | None, typer.Option("--build-dir", help="Use the launchers of this existing bwrap build (default: build the spec as `mcpspec build` does).")] = None,
    output_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    deny_target: Annotated[list[str] | None, typer.Option("--deny-target", help="HOST:PORT the sandbox must not reach, repeatable (default: 169.254.169.254:80, 10.0.0.1:80, [fd00:ec2::254]:80; a host loopback listener is always tried).")] = None,
    allow_target: Annotated[list[str] | None, typer.Option("--allow-target", help="HOST:PORT that must be reachable through the proxy, repeatable (default: the spec's allowlist).")] = None,
    lifetime_check_limit: Annotated[float, typer.Option("--lifetime-check-limit", help="Wait for max_lifetime only when it is at most this many seconds; a longer one fails as not checked.")] = 120.0,
    skip: Annotated[list[str] | None, typer.Option("--skip", help="Report these controls as skipped (not checked, which fails the run unless --allow-skipped): hidden, mounts, env, secrets, identity, egress, egress-allowed, pids, memory, lifetime.")] = None,
    allow_skipped: Annotated[bool, typer.Option("--allow-skipped", help="Let skipped controls pass the run (by default a control not checked fails it).")] = False,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Start a probe in place of each server, inside exactly the sandbox that server gets, and check
    every control of the spec on the live sandbox. Exit 1 when any control fails or was not checked."""
    from mcpspec.settings import Flags
    from mcpspec.verify.checks import DEFAULT_DENIED, FAMILIES, Options, parse_destination
    from mcpspec.verify.output import failed, render
    from mcpspec.verify.run import VerifyError, verify_file

    if target != "bwrap":
        _usage("verify checks bwrap sandboxes only (--target bwrap)")
    if output_format not in ("text", "json"):
        _usage("--format must be text or json")
    unknown = sorted(set(skip or ()) - FAMILIES)
    if unknown:
        _usage(f"--skip takes {', '.join(sorted(FAMILIES))}; not {', '.join(unknown)}")
    try:
        denied = tuple(parse_destination(text) for text in deny_target) if deny_target else DEFAULT_DENIED
        allowed = tuple(parse_destination(text) for text in allow_target) if allow_target else None
    except ValueError as exc:
        _usage(str(exc))
    options = Options(denied, allowed, lifetime_check_limit, frozenset(skip or ()))
    chosen = _settings(Flags(config), file)
    try:
        rows = verify_file(file, servers or [], options, build_dir, chosen)
    except VerifyError as exc:
        _usage(str(exc))
    except _usage_errors() as exc:
        _usage(str(exc))
    sys.stdout.write(render(rows, output_format, allow_skipped))
    raise typer.Exit(EXIT_FINDINGS if failed(rows, allow_skipped) else EXIT_CLEAN)


@app.command("run")
def run_command(
    file: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    server: Annotated[str | None, typer.Argument(help="The server to start (none: every server of --agent, as one MCP server).", show_default=False)] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent whose workspace the run uses (default: the server's only agent); alone, every server it uses.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="The run's id (default: the time and process id).")] = None,
    approver: Annotated[str | None, typer.Option("--approver", help="Command that approves a call: reads one JSON object on stdin, exit 0 allows.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP + " Its approver is used when --approver is not given.")] = None,
    otel: Annotated[str | None, typer.Option("--otel", metavar="URL", help="Export a span per tools/call to this OTLP/HTTP collector (JSON, POST URL/v1/traces); https, or http to loopback.")] = None,
    audit_key_env: Annotated[str | None, typer.Option("--audit-key-env", metavar="VAR", help="Key the audit hash chain with HMAC-SHA256 under the key in this environment variable.")] = None,
    audit_key_file: Annotated[str | None, typer.Option("--audit-key-file", metavar="PATH", help="Or under the key in this file (yours, writable by no one else).")] = None,
    listen: Annotated[
        str | None, typer.Option("--listen", metavar="ADDR:PORT", help="Serve the client over streamable HTTP on this loopback address (127.0.0.1:8931) instead of stdio.")
    ] = None,
    token_file: Annotated[Path | None, typer.Option("--token-file", help="With --listen: write the run's bearer token to this file (mode 0600) instead of stderr.")] = None,
) -> None:
    """Start SERVER in its bubblewrap sandbox (or reach it at its URL when it is external) and relay
    MCP over stdio, enforcing the spec's tool allowlist, lock pins, limits and approvals, with an
    audit line per call (see docs/run.md). With --agent and no SERVER: every server of the agent,
    each in its own sandbox and relay, as one MCP server (a name two servers share is SERVER__NAME).

    Exit status: 0 the client ended the session, 1 the server could not start, 2 usage,
    3 something new or changed versus mcp-sandbox.lock was refused, 4 the server ended first.
    Needs the run extra: pip install 'mcpspec[run]'."""
    _needs_run_extra("run")
    from mcpspec.config import ConfigError, split_approver
    from mcpspec.run.session import RunOptions, run_agent_session, run_session
    from mcpspec.settings import Flags

    if server is None and agent is None:
        _usage("give a SERVER to start, or --agent NAME to serve every server of that agent")

    chosen = _settings(Flags(config), file)
    try:
        command = split_approver(approver) if approver is not None else None
    except ConfigError as exc:
        _usage(str(exc))
    try:
        options = RunOptions(agent, run_id, command, otel, audit_key_env, audit_key_file, listen, token_file)
        status = run_session(file, server, options, chosen) if server is not None else run_agent_session(file, options, chosen)
    except _usage_errors() as exc:
        _usage(str(exc))
    raise typer.Exit(status)


@app.command("audit")
def audit_command(
    action: Annotated[str, typer.Argument(metavar="verify", help="What to do: verify.", show_default=False)],
    file: Annotated[Path, typer.Argument(help="An audit log written by `mcpspec run` (a file sink, or journal lines exported with journalctl -o cat).", show_default=False)],
    key_env: Annotated[str | None, typer.Option("--key-env", metavar="VAR", help="The environment variable holding the HMAC key the runs were keyed with (--audit-key-env).")] = None,
    key_file: Annotated[str | None, typer.Option("--key-file", metavar="PATH", help="Or the file holding it (--audit-key-file).")] = None,
    allow_open: Annotated[bool, typer.Option("--allow-open", help="A run with no session_end (still going, or killed) is a warning, not a failure.")] = False,
    runs: Annotated[bool, typer.Option("--runs", help="First list each run: its lines, and the seq and hash it ended at (compare with what `mcpspec run` printed on stderr).")] = False,
) -> None:
    """Check the hash chains of an audit log: every run's lines present, in order and unedited.

    Prints FILE:LINE: problem for each broken line (the first broken line first), then a summary.
    Exit status: 0 intact, 1 broken, 2 usage (the file or key cannot be read). See docs/run.md."""
    from mcpspec.run.audit_verify import render, verify_log
    from mcpspec.run.chain import ChainKeyError
    from mcpspec.run.chainkey import chain_key

    if action != "verify":
        _usage(f"mcpspec audit: unknown action {action!r} (the one action is verify)")
    try:
        key = chain_key(key_env, key_file, ("--key-env", "--key-file"))
    except ChainKeyError as exc:
        _usage(str(exc))
    try:
        with open(file, "rb") as stream:
            result = verify_log(stream, key, allow_open)
    except OSError as exc:
        _usage(f"{file}: {exc.strerror or exc}")
    sys.stdout.write(render(str(file), result, runs))
    raise typer.Exit(EXIT_CLEAN if result.intact else EXIT_FINDINGS)


@app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="The client's MCP config file (claude_desktop_config.json, .mcp.json, .vscode/mcp.json, config.toml...).", show_default=False)],
    client: Annotated[str, typer.Option("--from", metavar="CLIENT", help="The client that wrote PATH: claude-desktop, claude-code, vscode, cursor, windsurf, codex, gemini, zed, cline, continue, or auto.", show_default=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the spec to this file (atomically) instead of stdout; with --into, instead of SPEC.")] = None,
    into: Annotated[Path | None, typer.Option("--into", metavar="SPEC", help="Add the servers to this existing spec, keeping its comments and order.")] = None,
    project: Annotated[str | None, typer.Option("--project", metavar="NAME", help="Project name of a new spec (default: the current directory's name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --output file.")] = False,
) -> None:
    """Write a sandbox spec for the MCP servers of a client's config.

    Literal secrets are never copied: they become secrets read from environment variables
    and a finding to rotate them. Findings go to stderr; exit 0 once the spec is written,
    2 when the config cannot be read.
    """
    from mcpspec.importer.findings import summary
    from mcpspec.importer.reading import ImportFailure
    from mcpspec.importer.run import import_config

    if output is not None and output.exists() and not force and output != into:
        _usage(f"{output} exists: give --force to overwrite it, or --into {output} to add to it")
    try:
        imported = import_config(path, client, project, into)
    except ImportFailure as exc:
        _usage(str(exc))
    destination = output or into
    _emit(imported.text, destination)
    for item in imported.findings:
        typer.echo(item.render(), err=True)
    typer.echo(summary(imported.findings, imported.servers, imported.client, str(destination or "stdout")), err=True)
    raise typer.Exit(EXIT_CLEAN)


def _emit(text: str | Iterable[str], output: Path | None, what: str | None = None) -> None:
    """Write ``text`` (or its pieces, in order) to stdout, or atomically to ``output`` and, when
    ``what`` names it, say on stderr what was written where (stdout may be a pipe of something else)."""
    from mcpspec.output import write_atomically

    if output is None:
        sys.stdout.writelines([text] if isinstance(text, str) else text)
        return
    try:
        write_atomically(output, text)
        size = output.stat().st_size
    except OSError as exc:
        _usage(f"cannot write {output}: {exc.strerror or exc}")
    if what is not None:
        typer.echo(f"wrote {what} to {output} ({size:,} bytes)", err=True)


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
