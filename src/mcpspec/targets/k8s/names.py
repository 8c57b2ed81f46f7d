"""Kubernetes names, labels and the escaping of values the kubelet would expand.

Project, server, agent and secret names are DNS labels of at most 40 characters
(``check_name``), so ``mcp-<project>``, ``<server>-egress`` and ``secret-<name>``
are valid object names as they are. Workspace dir names may hold ``_``: their
claim names add a checksum when they have to be changed.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from mcpspec.diagnostics import SpecPath, format_path
from mcpspec.ir.plan import EffectiveSandbox, Plan

GROUP = "mcpspec.dev"
SERVER_LABEL = f"{GROUP}/server"
AGENT_LABEL = f"{GROUP}/agent"  # the agent pods carry their own name under this key
AGENTS_PREFIX = "agents.mcpspec.dev/"  # a server's pods carry one key per agent that lists it
ROLE_LABEL = f"{GROUP}/role"
SPEC_PATH = f"{GROUP}/spec-path"
SECRET_NAMES = f"{GROUP}/secret-names"
WORKSPACE_DIR = f"{GROUP}/workspace-dir"
PROXY_PORT = 3128
BRIDGE_PORT = 8080
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\Z")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}\Z")


def namespace(plan: Plan) -> str:
    return f"mcp-{plan.project}"


def egress_name(server: str) -> str:
    return f"{server}-egress"


def claim_name(directory: str) -> str:
    """The PersistentVolumeClaim of one workspace dir."""
    if _DNS_LABEL.match(directory):
        return f"ws-{directory}"
    return f"ws-{directory.replace('_', '-').strip('-')}-{zlib.crc32(directory.encode()):08x}"


def is_dns_subdomain(value: str) -> bool:
    return bool(_DNS_SUBDOMAIN.match(value)) and all(_DNS_LABEL.match(part) for part in value.split("."))


def is_secret_key(value: str) -> bool:
    return bool(_SECRET_KEY.match(value)) and value not in (".", "..")


def labels(plan: Plan, name: str, component: str, server: str | None = None) -> dict[str, str]:
    out = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": plan.project,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "mcpspec",
    }
    if server is not None:
        out[SERVER_LABEL] = server
    return out


def server_labels(plan: Plan, sandbox: EffectiveSandbox, component: str = "mcp-server") -> dict[str, str]:
    out = labels(plan, sandbox.name, component, sandbox.name)
    out.update({AGENTS_PREFIX + agent: "true" for agent in sandbox.agents})
    return out


def selector(server: str, role: str) -> dict[str, str]:
    return {SERVER_LABEL: server, ROLE_LABEL: role}


def metadata(name: str, labels_: dict[str, str], path: SpecPath, **extra: Any) -> dict[str, Any]:
    """An object's metadata: its name, labels and the spec path it came from."""
    return {"name": name, "labels": dict(labels_), "annotations": {SPEC_PATH: format_path(path)}, **extra}


def kubelet_text(value: str) -> str:
    """A value in command, args or env that the kubelet must pass as it is.

    The kubelet expands ``$(NAME)`` there and turns ``$$`` into ``$``: doubling
    every ``$`` leaves nothing to expand. :func:`kubelet_value` reverses it.
    """
    return value.replace("$", "$$")


def kubelet_value(text: str) -> str:
    """What the kubelet passes for ``text`` (every ``$$`` becomes ``$``; ``$(NAME)`` is left as the reader's wide guess)."""
    return text.replace("$$", "$")
