"""Build one server's bubblewrap launcher into a private directory, for the commands that start servers.

`mcpspec run`, `mcpspec lock` and `mcpspec verify` never start a server outside its sandbox: they
build the whole spec for the bwrap target exactly as `mcpspec build` would (the same findings stop
it), write the output to a directory only the invoking user can read, and remove it afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mcpspec.api import BuildOutcome, build_file
from mcpspec.ir.plan import Plan
from mcpspec.report import build_summary
from mcpspec.settings import Settings
from mcpspec.targets.build import Build
from mcpspec.targets.writer import write_build


class LaunchError(Exception):
    """The server cannot be started: the spec does not build, or the server is not one this machine runs."""


class NotAServer(LaunchError):
    """The server named on the command line is not one of the spec's, or does not run here: a usage error."""


@dataclass(frozen=True)
class PreparedLauncher:
    """A written bwrap build and the launcher of one of its servers."""

    plan: Plan
    server: str
    directory: Path
    build: Build

    @property
    def command(self) -> Path:
        """The launcher script: the server's stdio command."""
        return self.directory / f"{self.server}.py"


def check_server(plan: Plan, server: str) -> None:
    """Raise LaunchError unless ``server`` is a server of ``plan`` that runs on this machine."""
    if server not in plan.servers:
        known = ", ".join(sorted(plan.servers))
        raise NotAServer(f"{plan.source.file}: no server named {server!r} (the spec has: {known})")
    if not plan.servers[server].runs_here:
        raise NotAServer(f"{plan.source.file}: server {server!r} has placement: external; it runs elsewhere")


def built(outcome: BuildOutcome, server: str) -> Build:
    """The bwrap build of ``outcome`` when it may start ``server``; LaunchError with the findings otherwise."""
    if outcome.build is None or outcome.stopped:
        raise LaunchError(build_summary.render(outcome).rstrip("\n"))
    launcher_name = f"{server}.py"
    if launcher_name not in outcome.build.files:
        raise LaunchError(f"the bwrap build has no launcher for {server!r}")
    return outcome.build


@contextmanager
def written(plan: Plan, server: str, build: Build) -> Iterator[PreparedLauncher]:
    """Write ``build`` to a fresh directory of mode 0700 and remove it when the block ends."""
    directory = Path(tempfile.mkdtemp(prefix="mcpspec-launch-"))
    try:
        os.chmod(directory, 0o700)
        write_build(directory, build)
        yield PreparedLauncher(plan, server, directory, build)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@dataclass(frozen=True)
class RemotePlan:
    """A server of the plan that runs elsewhere (``placement: external``): `mcpspec run` relays to its URL."""

    plan: Plan
    server: str


@contextmanager
def prepared_server(spec: str | os.PathLike[str], server: str, settings: Settings | None = None) -> Iterator[PreparedLauncher | RemotePlan]:
    """Build ``spec`` for bwrap as `mcpspec build` does (the same findings stop it) and yield
    ``server``'s written launcher, or a RemotePlan when the server is external."""
    outcome = build_file(spec, "bwrap", settings)
    if outcome.build is None or outcome.plan is None:
        raise LaunchError(build_summary.render(outcome).rstrip("\n"))
    plan = outcome.plan
    if server in plan.servers and not plan.servers[server].runs_here:
        if outcome.stopped:
            raise LaunchError(build_summary.render(outcome).rstrip("\n"))
        yield RemotePlan(plan, server)
        return
    check_server(plan, server)
    with written(plan, server, built(outcome, server)) as launcher:
        yield launcher


@contextmanager
def prepared_launcher(spec: str | os.PathLike[str], server: str, settings: Settings | None = None) -> Iterator[PreparedLauncher]:
    """Build ``spec`` for bwrap as `mcpspec build` does and yield ``server``'s written launcher."""
    with prepared_server(spec, server, settings) as prepared:
        if isinstance(prepared, RemotePlan):
            check_server(prepared.plan, server)  # raises: it runs elsewhere
            raise AssertionError(server)
        yield prepared
