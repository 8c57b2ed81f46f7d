"""ToolHive's authorization config (``thv run --authz-config FILE``, type ``cedarv1``) for one server.

ToolHive's middleware asks Cedar about ``tools/call`` (``Action::"call_tool"`` on ``Tool::"NAME"``),
``prompts/get`` (``Action::"get_prompt"`` on ``Prompt::"NAME"``) and ``resources/read``
(``Action::"read_resource"`` on ``Resource::"URI"``), with each argument of a call as the tool's
attribute ``arg_NAME`` (strings, booleans and numbers; an array or object only as
``arg_NAME_present``); listings are filtered by the same decisions. It cannot ask a person, so a
call that needs approval is denied. Every policy is written here; nothing else is granted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.cedar.decide import ServerPolicy, decide
from mcpspec.targets.cedar.literal import string
from mcpspec.targets.cedar.rules import FALSE, TRUE, Arguments, either

CALL = 'Action::"call_tool"'


def _refused(name: str) -> str | None:
    if name.endswith("_present"):  # ToolHive also writes arg_X_present for an array or object argument X
        return f"the argument {name!r} could be faked by ToolHive's arg_NAME_present marker of another argument"
    return None


ARGUMENTS = Arguments(
    has=lambda name: f"resource has {string('arg_' + name)}",
    value=lambda name: f"resource[{string('arg_' + name)}]",
    refused=_refused,
)


def server_policy(plan: Plan, sandbox: EffectiveSandbox) -> ServerPolicy:
    return decide(plan, sandbox, ARGUMENTS)


def policies(policy: ServerPolicy) -> list[str]:
    """The server's policies: a permit where a call is allowed, a forbid for every other call."""
    out: list[str] = []
    for tool in policy.tools:
        scope = f"(principal, action == {CALL}, resource == Tool::{string(tool.name)})"
        if tool.allow == FALSE:
            out.append(f"forbid{scope};")
        else:
            out.append(f"permit{scope};" if tool.allow == TRUE else f"permit{scope} when {{ {tool.allow} }};")
    listed = either([f"resource == Tool::{string(tool.name)}" for tool in policy.tools])
    if listed == FALSE:
        out.append(f"forbid(principal, action == {CALL}, resource);")
    else:  # ToolHive cannot ask a person: an unlisted tool is denied even where the spec would ask
        out.append(f"forbid(principal, action == {CALL}, resource) unless {{ {listed} }};")
    # The spec grants no prompt and no resource by name: none is read through this gateway.
    out.append('forbid(principal, action == Action::"get_prompt", resource);')
    out.append('forbid(principal, action == Action::"read_resource", resource);')
    return out


def config(policy: ServerPolicy) -> str:
    """The file ``thv run --authz-config`` reads."""
    document = {"version": "1.0", "type": "cedarv1", "cedar": {"policies": policies(policy), "entities_json": "[]"}}
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def schema(policy: ServerPolicy) -> str:
    """ToolHive's entities and actions as a Cedar schema (JSON), with the arguments the policies test."""
    common = {"name": {"type": "String"}, "operation": {"type": "String"}, "feature": {"type": "String"}}
    arguments = {f"arg_{name}": {"type": kind, "required": False} for name, kind in sorted(policy.types.items())}
    document = {"": {
        "entityTypes": {
            "Client": {}, "MCP": {}, "THVGroup": {}, "FeatureType": {},
            "Tool": {"memberOfTypes": ["MCP"], "shape": record({**common, **arguments})},
            "Prompt": {"memberOfTypes": ["MCP"], "shape": record(common)},
            "Resource": {"memberOfTypes": ["MCP"], "shape": record({**common, "uri": {"type": "String"}})},
        },
        "actions": {
            action: {"appliesTo": {"principalTypes": ["Client"], "resourceTypes": [kind], "context": record({})}}
            for action, kind in (("call_tool", "Tool"), ("get_prompt", "Prompt"), ("read_resource", "Resource"))
        },
    }}
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def record(attributes: Mapping[str, object]) -> dict[str, object]:
    """A Cedar schema record type."""
    return {"type": "Record", "attributes": attributes}
