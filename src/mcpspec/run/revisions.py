"""Protocol revisions in `mcpspec run`: which revision each client request speaks, whether the spec
lets it through, and what of ``_meta`` and of cacheable results the relay passes on.

The relay speaks 2025-06-18 and 2025-11-25 (the initialize handshake, one session) and 2026-07-28
(no session: ``server/discover``, and the revision, client info and capabilities in the ``_meta`` of
every request). A session keeps the era it opened with: a request of the other era is refused. Every
policy of the relay (allowlist, pins, approvals, limits, refusal of what a server asks the client) is
applied after this module has judged the revision, the same way on each.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcpspec.revisions import HANDSHAKE, MODERN, effective

UNSUPPORTED_PROTOCOL_VERSION = -32022
HEADER_MISMATCH = -32020
INVALID_REQUEST, INVALID_PARAMS = -32600, -32602

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# What of a request's ``_meta`` reaches the server: W3C trace context, the progress token and, at
# 2026-07-28, the envelope. Anything else could carry what the server should not see (a request, an
# answer to one, another client's state) and is dropped.
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
REQUEST_META_KEYS = TRACE_KEYS | {"progressToken"}
ENVELOPE_KEYS = frozenset({VERSION_KEY, CLIENT_INFO_KEY, CAPABILITIES_KEY, LOG_LEVEL_KEY})
RESULT_META_KEYS = TRACE_KEYS | {SERVER_INFO_KEY}  # what of a result's ``_meta`` reaches the client
# Results a 2026-07-28 client may cache (ttlMs, cacheScope): the relay forces ttlMs to 0, so a client
# never keeps a tool, prompt or resource the relay hides after the server changed it.
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})
RELAY_INFO = {"name": "mcpspec-run", "version": "1"}

Era = Literal["handshake", "modern"]


@dataclass(frozen=True)
class Refusal:
    """A client request the relay answers with an error, never sending it on."""

    code: int
    message: str
    data: dict[str, Any] | None = None


def claimed(method: str, params: Any) -> tuple[Era | None, str | None]:
    """The era and revision a client request claims: initialize offers a handshake revision; a request
    whose ``_meta`` carries the protocolVersion key (server/discover among them) is 2026-07-28-style."""
    if not isinstance(params, Mapping):
        params = {}
    if method == "initialize":
        offered = params.get("protocolVersion")
        return "handshake", offered if isinstance(offered, str) else None
    meta = params.get("_meta")
    if isinstance(meta, Mapping) and VERSION_KEY in meta:
        version = meta[VERSION_KEY]
        return "modern", version if isinstance(version, str) else None
    if method == "server/discover":
        return "modern", None
    return None, None


class Revisions:
    """The revisions of one session: what the spec allows, and the era the client opened with."""

    def __init__(self, listed: tuple[str, ...] | None) -> None:
        self.allowed = effective(listed)
        self.era: Era | None = None
        self.version: str | None = None  # the revision of the session once settled
        self.probed: str | None = None  # the revision of a server/discover not yet answered
        self.server_era: Era | None = None  # how the relay speaks to the server (another era than the client's: translated)
        self.hello: dict[str, Any] | None = None  # the server's screened initialize answer, when a 2026-07-28 client is translated

    def unsupported(self, requested: str | None) -> Refusal:
        shown = repr(requested[:64]) if requested else "none"
        return Refusal(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"refused by mcpspec run: protocol revision {shown} is not allowed for this server (it speaks {', '.join(self.allowed)})",
            {"supported": list(self.allowed), **({"requested": requested[:64]} if requested else {})},
        )

    def judge(self, method: str, params: Any) -> tuple[Any, Refusal | None]:
        """The params to send on, or why the request is refused."""
        era, requested = claimed(method, params)
        if era is None:
            if self.era == "modern" and method != "ping":
                return params, Refusal(INVALID_PARAMS, f"refused by mcpspec run: a 2026-07-28 request carries {VERSION_KEY!r} in its _meta")
            return screened_params(params, modern=False), None
        if self.era is not None and era != self.era:
            opened = "the initialize handshake" if self.era == "handshake" else "2026-07-28 requests"
            return params, Refusal(INVALID_REQUEST, f"refused by mcpspec run: this session opened with {opened}; a request of the other era is not relayed")
        if era == "handshake":
            spoken = [revision for revision in self.allowed if revision in HANDSHAKE]
            if not spoken:
                return params, self.unsupported(requested)
            self.era = self.server_era = "handshake"
            # The handshake negotiates: offered a revision the spec excludes, the server is offered the
            # newest it allows, and the client decides whether to speak it.
            if not isinstance(params, Mapping):  # no offer to negotiate: the server refuses it as it would
                return params, None
            chosen = requested if requested in spoken else spoken[-1]
            return {**screened_params(params, modern=False), "protocolVersion": chosen}, None
        if requested not in self.allowed or requested not in MODERN:
            return params, self.unsupported(requested)
        if method == "server/discover":  # a probe: the era is settled by the server's answer (or the fallback to initialize)
            self.probed = requested
        else:
            self.era, self.version = "modern", requested
        return screened_params(params, modern=True), None

    def must_probe(self, method: str, params: Any) -> bool:
        """Whether the server must be asked which era it speaks before this (judged) request goes on."""
        return self.server_era is None and claimed(method, params)[0] == "modern"

    @property
    def modern_version(self) -> str:
        return self.version or self.probed or MODERN[-1]

    def handshake_revision(self) -> str | None:
        """The revision the relay offers a server that does not speak 2026-07-28: the newest 2025 one allowed."""
        spoken = [revision for revision in self.allowed if revision in HANDSHAKE]
        return spoken[-1] if spoken else None

    def translated(self, hello: dict[str, Any]) -> None:
        """The server speaks only the handshake (its initialize answer, screened): 2026-07-28 requests are translated."""
        self.server_era, self.hello = "handshake", hello

    def local_discover(self) -> dict[str, Any]:
        """The server/discover answer the relay gives a 2026-07-28 client of a handshake-only server."""
        hello = self.hello or {}
        result: dict[str, Any] = {"supportedVersions": [self.modern_version], "capabilities": hello.get("capabilities") or {}}
        if isinstance(hello.get("instructions"), str):
            result["instructions"] = hello["instructions"]
        if isinstance(hello.get("serverInfo"), dict):
            result["_meta"] = {SERVER_INFO_KEY: hello["serverInfo"]}
        return result

    def to_server(self, params: Any) -> Any:
        """A client request's params as the server's era spells them: without the envelope when translated."""
        return screened_params(params, modern=False) if self.era == "modern" and self.server_era == "handshake" else params

    def discovered(self) -> None:
        """The server answered server/discover: the session is 2026-07-28 from now on."""
        if self.era is None and self.probed is not None:
            self.era, self.version = "modern", self.probed
        if self.server_era is None:
            self.server_era = "modern"

    def settled(self, version: Any) -> Refusal | None:
        """The server's answer to initialize names ``version``: None when the spec allows it."""
        if isinstance(version, str) and version in self.allowed and version in HANDSHAKE:
            if self.era != "modern":  # a translated 2026-07-28 client keeps its own revision
                self.version = version
            return None
        return self.unsupported(version if isinstance(version, str) else None)

    def own_params(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """Params of a request the relay sends of its own accord (tools/list): at 2026-07-28 it carries
        the envelope too, as the relay's own client (no capability)."""
        if self.server_era != "modern":
            return params
        return {**(params or {}), "_meta": self.envelope()}

    def envelope(self) -> dict[str, Any]:
        """The relay's own 2026-07-28 envelope: its name, no capability."""
        return {VERSION_KEY: self.modern_version, CLIENT_INFO_KEY: RELAY_INFO, CAPABILITIES_KEY: {}}

    def stamped(self, result: dict[str, Any]) -> dict[str, Any]:
        """A result the relay makes itself: at 2026-07-28 every result says its resultType."""
        return {**result, "resultType": "complete"} if self.era == "modern" else result

    def screen_result(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        """A result as the client gets it: only trace context and server info of its ``_meta``; a
        cacheable result immediately stale and private; a discover result naming only allowed revisions."""
        result = self.stamped(result) if "resultType" not in result else dict(result)
        meta = result.get("_meta")
        if isinstance(meta, Mapping):
            kept = {key: value for key, value in meta.items() if key in RESULT_META_KEYS}
            if kept:
                result["_meta"] = kept
            else:
                del result["_meta"]
        if method in CACHEABLE and (self.era == "modern" or "ttlMs" in result):
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        if method == "server/discover":
            versions = result.get("supportedVersions")
            result["supportedVersions"] = [v for v in versions if v in self.allowed] if isinstance(versions, list) else []
        return result


def screened_params(params: Any, modern: bool) -> Any:
    """Request params with only the ``_meta`` keys the server may see (the envelope only at 2026-07-28)."""
    if not isinstance(params, Mapping):
        return params
    meta = params.get("_meta")
    if meta is None:
        return dict(params)
    allowed = REQUEST_META_KEYS | (ENVELOPE_KEYS if modern else frozenset())
    kept = {key: value for key, value in meta.items() if key in allowed} if isinstance(meta, Mapping) else {}
    out = {key: value for key, value in params.items() if key != "_meta"}
    if kept:
        out["_meta"] = kept
    return out


def header_mismatch(headers: Mapping[str, str], method: str, params: Any) -> Refusal | None:
    """At 2026-07-28 over HTTP, ``Mcp-Method`` and (for a named request) ``Mcp-Name`` must agree with the
    body, else error -32020. Stdio carries no headers: a transport that has them calls this per request."""
    lowered = {key.lower(): value for key, value in headers.items()}
    if lowered.get("mcp-method") != method:
        return Refusal(HEADER_MISMATCH, "refused by mcpspec run: the Mcp-Method header does not match the request's method")
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    name = params.get(key) if key is not None and isinstance(params, Mapping) else None
    if isinstance(name, str) and _decoded(lowered.get("mcp-name")) != name:
        return Refusal(HEADER_MISMATCH, "refused by mcpspec run: the Mcp-Name header does not match the request's name")
    return None


def _decoded(value: str | None) -> str | None:
    """A header value as sent: plain ASCII, or base64 of UTF-8 between ``=?base64?`` and ``?=``."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
