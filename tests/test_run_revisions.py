"""How `mcpspec run` judges the protocol revision of each client request (mcpspec.run.revisions);
the real SDK client and server on each revision are in test_run_revisions_real.py."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcpspec.run.revisions import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION, VERSION_KEY, Revisions, header_mismatch

ENVELOPE = {VERSION_KEY: "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": {}}


def hello(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}


def test_an_initialize_offer_the_spec_excludes_is_negotiated_down_and_the_answer_checked() -> None:
    revisions = Revisions(("2025-06-18",))
    params, refused = revisions.judge("initialize", hello("2025-11-25"))
    assert refused is None and params["protocolVersion"] == "2025-06-18"
    assert revisions.settled("2025-11-25") is not None  # a server answering another revision is refused
    assert revisions.settled("2025-06-18") is None


@pytest.mark.parametrize("params", [None, [], "x", {"protocolVersion": 7}])
def test_a_malformed_initialize_is_judged_without_a_crash(params: Any) -> None:
    revisions = Revisions(None)
    _, refused = revisions.judge("initialize", params)
    assert refused is None or refused.code == UNSUPPORTED_PROTOCOL_VERSION
    assert revisions.judge("tools/list", {"_meta": {VERSION_KEY: ["2026-07-28"]}})[1] is not None


def test_initialize_when_the_spec_lists_only_2026_is_refused_with_32022_naming_what_it_allows() -> None:
    _, refused = Revisions(("2026-07-28",)).judge("initialize", hello("2025-11-25"))
    assert refused is not None and refused.code == UNSUPPORTED_PROTOCOL_VERSION
    assert refused.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


@pytest.mark.parametrize("method", ["server/discover", "tools/list", "tools/call"])
def test_an_enveloped_request_the_spec_excludes_is_refused(method: str) -> None:
    _, refused = Revisions(("2025-11-25",)).judge(method, {"_meta": ENVELOPE})
    assert refused is not None and refused.code == UNSUPPORTED_PROTOCOL_VERSION and refused.data == {"supported": ["2025-11-25"], "requested": "2026-07-28"}


def test_a_session_keeps_its_era() -> None:
    modern = Revisions(None)
    assert modern.judge("tools/list", {"_meta": ENVELOPE})[1] is None
    assert modern.judge("initialize", hello("2025-11-25"))[1] is not None
    assert modern.judge("tools/list", {})[1] is not None  # a 2026-07-28 request carries its envelope
    assert modern.judge("ping", None)[1] is None
    legacy = Revisions(None)
    assert legacy.judge("initialize", hello("2025-11-25"))[1] is None
    assert legacy.judge("tools/list", {"_meta": ENVELOPE})[1] is not None


def test_a_discover_the_server_does_not_answer_leaves_the_handshake_open() -> None:
    revisions = Revisions(None)
    assert revisions.judge("server/discover", {"_meta": ENVELOPE})[1] is None
    assert revisions.judge("initialize", hello("2025-11-25"))[1] is None  # the SDK's fallback
    answered = Revisions(None)
    answered.judge("server/discover", {"_meta": ENVELOPE})
    answered.discovered()
    assert answered.judge("initialize", hello("2025-11-25"))[1] is not None


@pytest.mark.parametrize("modern", [False, True])
def test_only_trace_context_progress_and_the_envelope_reach_the_server(modern: bool) -> None:
    revisions = Revisions(None)
    if not modern:
        revisions.judge("initialize", hello("2025-11-25"))
    meta = {"traceparent": "00-1-2-01", "tracestate": "a=b", "progressToken": 3, "x.example/ask": {"method": "roots/list", "params": {}}}
    params, refused = revisions.judge("tools/call", {"name": "t", "_meta": {**meta, **(ENVELOPE if modern else {})}})
    assert refused is None
    expected = {"traceparent", "tracestate", "progressToken"} | (set(ENVELOPE) if modern else set())
    assert set(params["_meta"]) == expected


def test_a_cacheable_result_is_immediately_stale_and_private_and_result_meta_keeps_trace_only() -> None:
    revisions = Revisions(None)
    revisions.judge("tools/list", {"_meta": ENVELOPE})
    result = {"tools": [], "ttlMs": 3_600_000, "cacheScope": "public", "resultType": "complete", "_meta": {"traceparent": "t", "x.example/next": {"a": 1}}}
    screened = revisions.screen_result("tools/list", result)
    assert screened["ttlMs"] == 0 and screened["cacheScope"] == "private" and screened["_meta"] == {"traceparent": "t"}
    assert revisions.stamped({"content": []})["resultType"] == "complete"
    assert "resultType" not in Revisions(None).stamped({"content": []})  # a 2025 client gets no 2026 key


def test_a_discover_answer_names_only_the_revisions_the_spec_allows() -> None:
    revisions = Revisions(("2026-07-28",))
    screened = revisions.screen_result("server/discover", {"supportedVersions": ["2025-11-25", "2026-07-28", "2099-01-01"], "capabilities": {}})
    assert screened["supportedVersions"] == ["2026-07-28"]


def test_mcp_method_and_name_headers_must_agree_with_the_body() -> None:
    params = {"name": "write_file", "arguments": {}}
    assert header_mismatch({"Mcp-Method": "tools/call", "Mcp-Name": "write_file"}, "tools/call", params) is None
    wrapped = "=?base64?" + base64.b64encode(b"write_file").decode() + "?="
    assert header_mismatch({"mcp-method": "tools/call", "mcp-name": wrapped}, "tools/call", params) is None
    for headers in ({"Mcp-Method": "tools/list", "Mcp-Name": "write_file"}, {"Mcp-Method": "tools/call", "Mcp-Name": "read_file"}, {"Mcp-Method": "tools/call"}):
        refused = header_mismatch(headers, "tools/call", params)
        assert refused is not None and refused.code == HEADER_MISMATCH == -32020
    assert header_mismatch({"Mcp-Method": "tools/list"}, "tools/list", {}) is None


def test_a_translated_client_keeps_its_revision_and_its_requests_lose_the_envelope() -> None:
    revisions = Revisions(("2025-11-25", "2026-07-28"))
    params, refused = revisions.judge("tools/call", {"name": "t", "_meta": {**ENVELOPE, "traceparent": "00-1-2-01"}})
    assert refused is None and revisions.must_probe("tools/call", params)
    assert revisions.handshake_revision() == "2025-11-25"
    assert revisions.settled("2025-11-25") is None
    revisions.translated({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}, "instructions": "hi"})
    assert revisions.modern_version == "2026-07-28" and not revisions.must_probe("tools/list", {"_meta": ENVELOPE})
    assert revisions.to_server(params) == {"name": "t", "_meta": {"traceparent": "00-1-2-01"}}
    assert revisions.own_params(None) is None  # the relay's own tools/list speaks the server's era
    discover = revisions.screen_result("server/discover", revisions.local_discover())
    assert discover["supportedVersions"] == ["2026-07-28"] and discover["capabilities"] == {"tools": {}} and discover["instructions"] == "hi"
    assert discover["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    assert discover["ttlMs"] == 0 and discover["resultType"] == "complete"


def test_a_server_speaking_2026_gets_the_relays_own_requests_enveloped() -> None:
    revisions = Revisions(None)
    revisions.judge("server/discover", {"_meta": ENVELOPE})
    revisions.discovered()
    own = revisions.own_params({"cursor": "c"})
    assert own is not None and own["cursor"] == "c" and own["_meta"][VERSION_KEY] == "2026-07-28"
    assert own["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {}
