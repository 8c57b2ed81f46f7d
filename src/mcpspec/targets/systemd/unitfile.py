"""Writing unit files: comments, sections of typed directives, shipped scripts and the hardening every unit shares."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from importlib import resources

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.common import embedded_source, header
from mcpspec.targets.seccomp import SyscallPolicy
from mcpspec.targets.systemd.directive import Directive, Fixed, UnitBool, UnitText, UnitValue, directive, fixed, joined

__all__ = ["comments", "confinement", "describe", "embedded_python", "embedded_shell", "hardening", "render", "shell_template"]

_TEMPLATE_VALUE = re.compile(r"^[A-Za-z0-9_./:-]+\Z")
_SYSCALL = re.compile(r"^[a-z_][a-z0-9_]*\Z")
# Never in a unit's allow-list, whatever a policy says: io_uring runs socket, connect and open
# operations that neither SystemCallFilter= nor RestrictAddressFamilies= sees.
REFUSED_HERE = frozenset({"io_uring_setup", "io_uring_enter", "io_uring_register"})


@functools.lru_cache(maxsize=16)
def package_text(name: str) -> str:
    """A file shipped beside this module (the in-sandbox shim, the audit helper), read once."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def embedded_shell(name: str) -> str:
    """A shipped shell script as a unit carries it: without its comment lines."""
    lines = package_text(name).splitlines()
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#")) + "\n"


def shell_template(name: str, **values: str | int) -> str:
    """A shipped one-line shell script with its ``@NAME@`` placeholders filled in.

    Only names this target built and numbers fill them (checked here: letters, digits
    and ``_./:-``, which need no quoting in a word or inside single quotes).
    """
    text = embedded_shell(name).rstrip("\n")
    for key, value in values.items():
        if not _TEMPLATE_VALUE.match(str(value)):
            raise ValueError(f"{value!r} cannot fill @{key.upper()}@ of {name}")
        text = text.replace(f"@{key.upper()}@", str(value))
    if re.search(r"@[A-Z_]+@", text):
        raise ValueError(f"{name}: a placeholder is left unfilled")
    return text


def embedded_python(name: str) -> str:
    """A shipped Python helper as a unit carries it: without its module docstring."""
    return embedded_source(__package__ or "mcpspec.targets.systemd", name)


def comments(plan: Plan, what: str) -> list[str]:
    """The header of a generated file (the spec's file name escaped by ``comment_line``)."""
    return header(plan, what)


def render(head: list[str], sections: Iterable[tuple[str, Sequence[Directive]]]) -> str:
    """A unit file: the comment head, then each section's directives (nothing else reaches a unit line)."""
    out = list(head)
    for title, lines in sections:
        out.extend(["", f"[{title}]", *(str(line) for line in lines)])
    return "\n".join(out) + "\n"


def describe(sandbox: EffectiveSandbox, what: str) -> UnitValue:
    """The server's description on one line; ``what`` is constant text (it may hold specifiers)."""
    text = " ".join("".join(c if ord(c) >= 0x20 and ord(c) != 0x7F else " " for c in sandbox.description).split())
    # The spec's text never ends the line: a final backslash there would continue it.
    return joined(UnitText(f"MCP server {sandbox.name}{': ' + text if text else ''} ("), Fixed(f"{what})"))


def hardening() -> list[Directive]:
    """What every unit of this target sets about the host it runs on."""
    return [fixed(line) for line in (
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
    )]


def system_call_filter(policy: SyscallPolicy, refused: str) -> list[Directive]:
    """The project's syscall policy as SystemCallFilter= lines: its allow-list by name (no group,
    so nothing the policy refuses, io_uring above all, comes back with one), then the groups this
    target refuses on top (``refused``, which also keeps systemd-analyze's score).

    The policy's argument filters are systemd settings here: clone without namespace flags is
    RestrictNamespaces=, personality is LockPersonality=, socket's families are
    RestrictAddressFamilies= (socketpair makes AF_UNIX pairs only). ``clone3`` is listed so that
    RestrictNamespaces= answers it with ENOSYS, as the policy does (libc then falls back to clone):
    left out, it would fail with EPERM and no thread could start.
    """
    if policy.enosys != ("clone3",):
        raise ValueError(f"the systemd target answers only clone3 with ENOSYS (through RestrictNamespaces=), not {policy.enosys}")
    names = sorted({*policy.allowed, *policy.enosys})
    bad = [name for name in names if not _SYSCALL.match(name) or name in REFUSED_HERE]
    if bad:
        raise ValueError(f"not in this target's syscall allow-list: {bad}")
    return [directive("SystemCallFilter", *(Fixed(name) for name in names)), directive("SystemCallFilter", Fixed(f"~{refused}"))]


def confinement(policy: SyscallPolicy, refused: str, write_execute: bool = False) -> list[Directive]:
    """Privileges, system calls and kernel features every unit of this target gives up."""
    return [
        *(fixed(line) for line in (
            "NoNewPrivileges=yes",
            "CapabilityBoundingSet=",
            "AmbientCapabilities=",
            "PrivateUsers=yes",
        )),
        *system_call_filter(policy, refused),
        *(fixed(line) for line in (
            "SystemCallArchitectures=native",
            "SystemCallErrorNumber=EPERM",
            "LockPersonality=yes",
        )),
        directive("MemoryDenyWriteExecute", UnitBool(not write_execute)),
        *(fixed(line) for line in (
            "RestrictNamespaces=yes",
            "RestrictRealtime=yes",
            "RestrictSUIDSGID=yes",
            "RemoveIPC=yes",
            "KeyringMode=private",
            "UMask=0077",
        )),
    ]
