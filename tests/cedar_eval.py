"""Evaluating the cedar target's policies with cedarpy, as each gateway would ask, beside `mcpspec run`'s verdict.

ToolHive asks ``Action::"call_tool"`` on ``Tool::"NAME"`` with the call's arguments as ``arg_NAME``
attributes (strings and booleans as they are, numbers as decimals, an array or object only as
``arg_NAME_present``); Docker Sandboxes asks ``MCP::Action::"invokeTool"`` on an ``MCP::Tool`` in
``MCP::Server::"SERVER"`` with the arguments as ``context.args``. Verdicts rank refuse < approve < allow.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import cedarpy

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.facts import approval_mode
from mcpspec.run.argrules import ruling

RANK = {"refuse": 0, "approve": 1, "allow": 2}


def oracle(plan: Plan, sandbox: EffectiveSandbox, tool: str, arguments: Mapping[str, Any] | None) -> str:
    """What `mcpspec run` does with the call (its gate: argument rules, then the approval mode)."""
    if tool not in sandbox.tools:
        return "approve" if sandbox.unlisted_tools == "allow" else "refuse"
    found = ruling(sandbox, tool, arguments)
    if found is not None:
        return found.action
    return "allow" if approval_mode(plan, sandbox.tools[tool]) is None else "approve"


def _toolhive_value(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"__extn": {"fn": "decimal", "arg": f"{float(value):.4f}"}}
    return value


def toolhive_attributes(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        if isinstance(value, (str, bool, int, float)):
            attrs[f"arg_{key}"] = _toolhive_value(value)
        else:
            attrs[f"arg_{key}_present"] = True
    return attrs


@functools.lru_cache(maxsize=64)
def approvals(text: str) -> frozenset[str]:
    """The ids of the policies annotated @requireApproval."""
    policies = json.loads(cedarpy.policies_to_json_str(text))["staticPolicies"]
    return frozenset(pid for pid, body in policies.items() if "requireApproval" in body.get("annotations", {}))


def toolhive(config: str, server: str, tool: str, arguments: Mapping[str, Any] | None) -> str:
    policies = "\n".join(json.loads(config)["cedar"]["policies"])
    attrs = {**toolhive_attributes(arguments), "name": tool, "operation": "call", "feature": "tool"}
    entities = [{"uid": {"type": "Tool", "id": tool}, "attrs": attrs, "parents": [{"type": "MCP", "id": server}]},
                {"uid": {"type": "MCP", "id": server}, "attrs": {}, "parents": []}]
    request = {"principal": {"type": "Client", "id": "alice"}, "action": {"type": "Action", "id": "call_tool"},
               "resource": {"type": "Tool", "id": tool}, "context": {}}
    result = cedarpy.is_authorized(request, policies, entities)
    assert not result.diagnostics.errors, result.diagnostics.errors
    return "allow" if result.allowed else "refuse"


def toolhive_other(config: str, action: str, kind: str, name: str) -> bool:
    """Whether ToolHive would answer a prompts/get or resources/read."""
    policies = "\n".join(json.loads(config)["cedar"]["policies"])
    entities = [{"uid": {"type": kind, "id": name}, "attrs": {"name": name}, "parents": []}]
    request = {"principal": {"type": "Client", "id": "alice"}, "action": {"type": "Action", "id": action},
               "resource": {"type": kind, "id": name}, "context": {}}
    return bool(cedarpy.is_authorized(request, policies, entities).allowed)


def docker(text: str, server: str, tool: str, arguments: Mapping[str, Any] | None, stdio: bool = True) -> str:
    flags = {"readOnly": False, "destructive": True, "idempotent": False, "openWorld": True}
    entities = [{"uid": {"type": "MCP::Tool", "id": f"{server}/{tool}"}, "attrs": {"name": tool, **flags},
                 "parents": [{"type": "MCP::Server", "id": server}]},
                {"uid": {"type": "MCP::Server", "id": server}, "attrs": {}, "parents": []}]
    # Cedar has no null: Docker leaves out an argument it cannot represent.
    context: dict[str, Any] = {"args": _cedar(arguments)} if stdio and isinstance(arguments, Mapping) else {}
    request = {"principal": {"type": "MCP::Principal", "id": "alice"}, "action": {"type": "MCP::Action", "id": "invokeTool"},
               "resource": {"type": "MCP::Tool", "id": f"{server}/{tool}"}, "context": context}
    result = cedarpy.is_authorized(request, text, entities)
    assert not result.diagnostics.errors, result.diagnostics.errors
    if not result.allowed:
        return "refuse"
    return "approve" if set(result.diagnostics.reasons) & approvals(text) else "allow"


def _cedar(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _cedar(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_cedar(item) for item in value if item is not None]
    return value


def docker_other(text: str, action: str, kind: str, attrs: dict[str, Any]) -> bool:
    entities = [{"uid": {"type": f"MCP::{kind}", "id": "x"}, "attrs": attrs, "parents": []}]
    request = {"principal": {"type": "MCP::Principal", "id": "alice"}, "action": {"type": "MCP::Action", "id": action},
               "resource": {"type": f"MCP::{kind}", "id": "x"}, "context": {}}
    return bool(cedarpy.is_authorized(request, text, entities).allowed)
