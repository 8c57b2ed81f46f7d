"""What a server may send a client through `mcpspec run`: the result shapes the relay understands, per method.

A server can ask the client for things (sampling: the model's output; elicitation: what the user
types; roots: the host's paths) as a JSON-RPC request, and, from MCP 2026-07-28, inside the result
of any request (``resultType: "input_required"`` with ``inputRequests``), in its tasks extension, or
wherever a client might look. The spec grants a server none of these, so the relay refuses them all,
wherever they are carried: a result is relayed only when it is the result of its method (resultType
absent or ``complete``, only that result's keys), and nothing anywhere in a message from the server may
look like a request for the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.types import (
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    EmptyResult,
    GetPromptResult,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
    Result,
)

# What the relay relays, by the method of the client's request. Every other method is not relayed.
RESULTS: Mapping[str, type[Result]] = {
    "initialize": InitializeResult,
    "server/discover": DiscoverResult,
    "ping": EmptyResult,
    "tools/list": ListToolsResult,
    "tools/call": CallToolResult,
    "resources/list": ListResourcesResult,
    "resources/templates/list": ListResourceTemplatesResult,
    "resources/read": ReadResourceResult,
    "resources/subscribe": EmptyResult,
    "resources/unsubscribe": EmptyResult,
    "prompts/list": ListPromptsResult,
    "prompts/get": GetPromptResult,
    "completion/complete": CompleteResult,
    "logging/setLevel": EmptyResult,
}
# Keys that carry a request for the client, or the state of one (2026-07-28 and its tasks extension).
CARRIER_KEYS = frozenset({"inputRequests", "input_requests", "requestState", "inputResponses"})
# Client request params that answer a server's input request: a client that never saw one has none to send.
ANSWER_KEYS = frozenset({"inputResponses", "requestState"})
# What a client declares it can do for a server; the relay does none of it for the server.
CLIENT_ONLY_CAPABILITIES = ("sampling", "elicitation", "roots", "tasks", "experimental", "extensions")
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
SCHEMA_KEYS = frozenset({"inputSchema", "outputSchema"})  # JSON Schemas: property names there are data, not requests


class Refused(ValueError):
    """A message from the server that the relay does not pass on, and why."""


def result_keys(model: type[Result]) -> frozenset[str]:
    """The keys a result of ``model`` may have on the wire."""
    return frozenset(field.alias or name for name, field in model.model_fields.items())


def carried_request(value: Any) -> str | None:
    """Where in ``value`` (a JSON value) something asks the client for input; None when nothing does.

    An object is such a carrier when it has a key of ``CARRIER_KEYS``, a ``resultType`` other than
    ``complete``, or a string ``method`` beside ``params`` or ``jsonrpc`` (a JSON-RPC request, nested).
    """
    steps: list[tuple[int, str]] = [(-1, "")]  # (parent, step): a path is spelled only for what is found
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, node = todo.pop()
        if isinstance(item, dict):
            found = CARRIER_KEYS & item.keys()
            kind = item.get("resultType")
            method = item.get("method")
            if found:
                why = f"has {sorted(found)[0]!r}"
            elif kind is not None and kind != "complete":
                why = f"has resultType {str(kind)[:64]!r}"
            elif isinstance(method, str) and ("params" in item or "jsonrpc" in item):
                why = f"holds a request {method[:64]!r}"
            else:
                for key, child in item.items():
                    if isinstance(child, dict | list) and key not in SCHEMA_KEYS:
                        steps.append((node, f".{str(key)[:64]}"))
                        todo.append((child, len(steps) - 1))
                continue
            return f"{_spelled(steps, node) or 'the message'} {why}"
        if isinstance(item, list):
            for index, child in enumerate(item):
                if isinstance(child, dict | list):
                    steps.append((node, f"[{index}]"))
                    todo.append((child, len(steps) - 1))
    return None


def _spelled(steps: list[tuple[int, str]], node: int) -> str:
    parts: list[str] = []
    while node > 0:
        node, step = steps[node]
        parts.append(step)
    return "".join(reversed(parts))


def checked_result(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as the relay passes it on for a request of ``method``: Refused when it asks the
    client for something, ValueError when it is not a result of ``method``.

    The result is validated as the SDK reads it and re-serialized, so no key the relay does not
    know (at any depth of the model) reaches the client: such keys are dropped, but in a
    `tools/call` result, where they are refused (a call answered with a listing's keys).
    """
    model = RESULTS.get(method)
    if model is None:
        raise Refused(f"{method!r} is not relayed")
    carried = carried_request(result)
    if carried is not None:
        raise Refused(f"the server asked the client for input inside a {method} result ({carried})")
    extra = set(result) - result_keys(model)
    if extra and method == "tools/call":  # a call result with another result's keys (tools, say) is refused; elsewhere they are dropped
        raise ValueError(f"keys a {method} result does not have: {sorted(extra)[:5]}")
    parsed = model.model_validate(result)  # a ValidationError is a ValueError: Refused by the caller
    return parsed.model_dump(by_alias=True, mode="json", exclude_unset=True)


def without_client_capabilities(capabilities: Any) -> Any:
    """A client's capabilities without what the relay will not do for the server (it answers none of it)."""
    if not isinstance(capabilities, dict):
        return capabilities
    return {key: value for key, value in capabilities.items() if key not in CLIENT_ONLY_CAPABILITIES}


def request_params(method: str, params: Any) -> Any:
    """The params of a client request as the server gets them: the client declares no capability the
    relay refuses (initialize, or a 2026-07-28 per-request ``_meta``)."""
    if not isinstance(params, dict):
        return params
    params = dict(params)
    if method == "initialize" and "capabilities" in params:
        params["capabilities"] = without_client_capabilities(params["capabilities"])
    meta = params.get("_meta")
    if isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
        params["_meta"] = {**meta, CLIENT_CAPABILITIES_META_KEY: without_client_capabilities(meta[CLIENT_CAPABILITIES_META_KEY])}
    return params
