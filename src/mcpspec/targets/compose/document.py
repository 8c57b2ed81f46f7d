"""The compose file: every built server's services, networks and secrets, dumped by PyYAML."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

import yaml

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.common import header
from mcpspec.targets.compose.service import delivered, helper_services, networks, secret_declaration, service, volumes
from mcpspec.targets.yamlout import dump_all


def compose_file(plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> str:
    services: dict[str, Any] = {}
    nets: dict[str, Any] = {}
    secrets: dict[str, Any] = {}
    vols: dict[str, Any] = {}
    for sandbox in built:
        services[sandbox.name] = service(plan, sandbox, options)
        services.update(helper_services(plan, sandbox, options))
        nets.update(networks(sandbox, options))
        vols.update(volumes(sandbox, options))
        for grant in delivered(sandbox):
            secrets[grant.name] = secret_declaration(grant)
    document: dict[str, Any] = {"services": services}
    if nets:
        document["networks"] = nets
    if vols:
        document["volumes"] = vols
    if secrets:
        document["secrets"] = secrets
    document["x-podman"] = {"in_pod": False}
    text = dump_all([document], yaml.SafeDumper)
    return "\n".join(header(plan, "a compose file (docker compose, podman-compose)")) + "\n" + text


def shim_text() -> str:
    return resources.files(__package__).joinpath("entrypoint.sh").read_text(encoding="utf-8")
