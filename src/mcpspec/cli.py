"""The ``mcpspec`` command line: parse arguments, call the API, choose the exit status.

Exit status: 0 clean, 1 findings or spec errors, 2 usage or internal error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from mcpspec import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

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


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)] = False,
) -> None:
    """Lint and compile MCP server sandbox policy (mcp-sandbox.yaml)."""


@app.command()
def lint(
    files: Annotated[list[Path], typer.Argument(help="Spec files to check.", show_default=False)],
) -> None:
    """Validate spec files; print every problem as FILE:LINE:COL: CODE message."""
    from mcpspec.api import load
    from mcpspec.diagnostics import Diagnostic, SpecError
    from mcpspec.report.text import render_diagnostic, render_summary
    from mcpspec.source.loader import UsageError

    found: list[Diagnostic] = []
    usage_failed = False
    for file in files:
        try:
            load(file, display_name=str(file))
        except UsageError as exc:
            typer.echo(f"mcpspec: error: {exc}", err=True)
            usage_failed = True
        except SpecError as exc:
            text = _read_text(file)
            for diagnostic in exc.diagnostics:
                typer.echo(render_diagnostic(diagnostic, text))
            found.extend(exc.diagnostics)
    if usage_failed:
        raise typer.Exit(EXIT_USAGE)
    typer.echo(render_summary(len(files), found))
    raise typer.Exit(EXIT_FINDINGS if found else EXIT_CLEAN)


@app.command()
def schema() -> None:
    """Print the JSON Schema of mcp-sandbox.yaml."""
    from mcpspec.spec.schema import render_schema

    sys.stdout.write(render_schema())


def _read_text(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _internal_error(exc: BaseException) -> NoReturn:
    if os.environ.get("MCPSPEC_DEBUG"):
        raise exc
    typer.echo(f"mcpspec: internal error: {type(exc).__name__}: {exc}", err=True)
    typer.echo("This is a bug in mcpspec; rerun with MCPSPEC_DEBUG=1 for details and report it.", err=True)
    raise SystemExit(EXIT_USAGE)


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
