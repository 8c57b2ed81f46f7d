"""Docker Sandboxes' MCP policy: one organization policy (Cedar, Docker's ``MCP`` namespace) for every server.

Docker's MCP gateway asks Cedar about tool calls (``MCP::Action::"invokeTool"`` on an ``MCP::Tool``
whose ``name`` is the bare tool name, a member of ``MCP::Server::"NAME"``, the registered name), with a
local stdio server's call arguments as ``context.args``. A permit annotated ``@requireApproval`` makes
the gateway ask in the session (MCP elicitation) and deny when it cannot; a matching forbid wins over
both. Nothing else is permitted: registration, gateway meta-tools (``invokePrimordial``: code-mode,
mcp-exec), prompts and resource reads fall to Cedar's default deny.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import Refused
from mcpspec.targets.cedar.decide import ServerPolicy, decide
from mcpspec.targets.cedar.literal import string
from mcpspec.targets.cedar.rules import FALSE, TRUE, Arguments, both, either, negate
from mcpspec.targets.cedar.toolhive import record

INVOKE = 'MCP::Action::"invokeTool"'
POLICY_FILE = "docker-sandboxes/mcp-policy.cedar"
SCHEMA_FILE = "docker-sandboxes/mcp-policy.cedarschema.json"

ARGUMENTS = Arguments(
    has=lambda name: f"context has args && context.args has {string(name)}",
    value=lambda name: f"context.args[{string(name)}]",
    refused=lambda name: None,
)


def server_policy(plan: Plan, sandbox: EffectiveSandbox) -> ServerPolicy:
    return decide(plan, sandbox, ARGUMENTS)


def _statement(effect: str, server: str, condition: str, approval: str | None = None) -> str:
    head = f"@requireApproval({string(approval)})\n" if approval is not None else ""
    scope = f"{effect}(principal, action == {INVOKE}, resource is MCP::Tool in MCP::Server::{string(server)})"
    return head + (f"{scope};" if condition == TRUE else f"{scope} when {{ {condition} }};")


def statements(policy: ServerPolicy) -> list[str]:
    out: list[str] = []
    server = policy.name
    for tool in policy.tools:
        named = f"resource.name == {string(tool.name)}"
        if tool.allow == FALSE and tool.approve == FALSE:
            out.append(_statement("forbid", server, named))
            continue
        if tool.allow != FALSE:
            out.append(_statement("permit", server, both([named, tool.allow])))
        if tool.approve != FALSE:
            out.append(_statement("permit", server, both([named, tool.approve]), f"mcpspec: {server}/{tool.name} needs a person's approval"))
    unlisted = negate(either([f"resource.name == {string(tool.name)}" for tool in policy.tools]))
    if policy.unlisted_allowed:  # `mcpspec run` asks a person before every call of a tool the spec does not list
        out.append(_statement("permit", server, unlisted, f"mcpspec: {server} offers a tool its spec does not list"))
    else:
        out.append(_statement("forbid", server, unlisted))
    return out


def policy_text(policies: Sequence[ServerPolicy]) -> str:
    blocks = ["\n\n".join(statements(policy)) for policy in policies]
    return "\n\n".join(blocks) + "\n"


def schema(policies: Sequence[ServerPolicy]) -> str:
    """Docker's MCP namespace as a Cedar schema (JSON), with the arguments the policies test.

    One policy holds every server, and Cedar types an argument one way: an argument that one server
    compares as a string and another as a boolean is refused (TG004)."""
    types: dict[str, str] = {}
    for policy in policies:
        for name, kind in policy.types.items():
            if types.setdefault(name, kind) != kind:
                raise Refused("call-policy", ("servers", policy.name, "tools"),
                              f"the argument {name!r} is compared as a {kind} here and as a {types[name]} by another server: "
                              "Docker Sandboxes' one policy cannot type it both ways")
    flags = {flag: {"type": "Boolean"} for flag in ("readOnly", "destructive", "idempotent", "openWorld")}
    args = {name: {"type": kind, "required": False} for name, kind in sorted(types.items())}
    context = record({"args": {**record(args), "required": False}})
    server = {"type": {"type": "String"}, "identityURL": {"type": "String"}, "requiresOAuth": {"type": "Boolean"},
              "requiresNetwork": {"type": "Boolean"}, "command": {"type": "String"}, "args": {"type": "Set", "element": {"type": "String"}}}
    document = {"MCP": {
        "entityTypes": {
            "Principal": {},
            "Server": {"shape": record(server)},
            "Tool": {"memberOfTypes": ["Server"], "shape": record({"name": {"type": "String"}, **flags})},
            "Resource": {"shape": record({"uri": {"type": "String"}})},
            "Prompt": {"shape": record({"name": {"type": "String"}})},
            "Primordial": {},
        },
        "actions": {
            "invokeTool": {"appliesTo": {"principalTypes": ["Principal"], "resourceTypes": ["Tool"], "context": context}},
            "register": {"appliesTo": {"principalTypes": ["Principal"], "resourceTypes": ["Server"], "context": record({})}},
            "invokePrimordial": {"appliesTo": {"principalTypes": ["Principal"], "resourceTypes": ["Primordial"], "context": record({})}},
            "readResource": {"appliesTo": {"principalTypes": ["Principal"], "resourceTypes": ["Resource"], "context": record({})}},
            "getPrompt": {"appliesTo": {"principalTypes": ["Principal"], "resourceTypes": ["Prompt"], "context": record({})}},
        },
    }}
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
