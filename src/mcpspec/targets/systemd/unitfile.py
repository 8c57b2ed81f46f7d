"""Writing unit files: comments, sections, refused values and the hardening every unit shares."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from importlib import resources

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import Refused
from mcpspec.targets.common import header
from mcpspec.targets.escape import Unrepresentable, unit_path, unit_text


def package_text(name: str) -> str:
    """A file shipped beside this module (the in-sandbox shim, the audit helper)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def embedded_shell(name: str) -> str:
    """A shipped shell script as a unit carries it: without its comment lines."""
    lines = package_text(name).splitlines()
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#")) + "\n"


def embedded_python(name: str) -> str:
    """A shipped Python helper as a unit carries it: without its module docstring."""
    source = package_text(name)
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines = source.splitlines()
        source = "\n".join(lines[:first.lineno - 1] + lines[first.end_lineno or first.lineno:]).lstrip("\n") + "\n"
    return source


def comments(plan: Plan, what: str) -> list[str]:
    """The header of a generated file (the spec's file name escaped by ``comment_line``)."""
    return header(plan, what)


def render(head: list[str], sections: Iterable[tuple[str, list[str]]]) -> str:
    out = list(head)
    for title, lines in sections:
        out.extend(["", f"[{title}]", *lines])
    return "\n".join(out) + "\n"


def describe(sandbox: EffectiveSandbox, what: str) -> str:
    """The server's description on one line; ``what`` is constant text (it may hold specifiers)."""
    text = " ".join("".join(c if ord(c) >= 0x20 and ord(c) != 0x7F else " " for c in sandbox.description).split())
    return unit_text(f"MCP server {sandbox.name}{': ' + text if text else ''}") + f" ({what})"


def path(value: str, control: str, spec_path: SpecPath) -> str:
    try:
        return unit_path(value)
    except Unrepresentable as exc:
        raise Refused(control, spec_path, str(exc)) from None


def hardening() -> list[str]:
    """What every unit of this target sets about the host it runs on."""
    return [
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "PrivateMounts=yes",
        "PrivateIPC=yes",
        "DevicePolicy=closed",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "ProtectProc=invisible",
        "ProcSubset=pid",
    ]


def confinement(system_calls: str, write_execute: bool = False) -> list[str]:
    """Privileges, system calls and kernel features every unit of this target gives up."""
    return [
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "PrivateUsers=yes",
        "SystemCallFilter=@system-service",
        f"SystemCallFilter=~{system_calls}",
        "SystemCallArchitectures=native",
        "SystemCallErrorNumber=EPERM",
        "LockPersonality=yes",
        f"MemoryDenyWriteExecute={'no' if write_execute else 'yes'}",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "RemoveIPC=yes",
        "KeyringMode=private",
        "UMask=0077",
    ]
