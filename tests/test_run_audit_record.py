"""A call's audit line holds what the spec's logging.record asks for, and no more."""

from __future__ import annotations

from typing import Any

from mcpspec.run.session import RECORDED_BY, _Context, recorded_call_fields
from mcpspec.spec.models import LogField

CALL = {"server": "s", "agent": "coder", "run_id": "r1", "tool": "t", "effects": ["deploy"], "decision": "allowed",
        "approver": "command", "status": "ok", "result_bytes": 10, "arguments_sha256": "ab", "duration_s": 0.1}


class Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def write(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


def test_every_recorded_entry_names_fields_of_a_call_line() -> None:
    assert set(RECORDED_BY) <= set(LogField.__args__)  # type: ignore[attr-defined]


def test_a_call_line_keeps_only_the_recorded_fields() -> None:
    assert recorded_call_fields(CALL, ["tool"]) == {"server": "s", "tool": "t", "effects": ["deploy"], "duration_s": 0.1}
    assert recorded_call_fields(CALL, list(RECORDED_BY)) == CALL
    assert "arguments_sha256" not in recorded_call_fields(CALL, ["tool", "caller", "decision", "exit_status"])


def test_the_context_filters_call_lines_and_keeps_session_lines_whole() -> None:
    lines = Lines()
    context = _Context(lines, {"server": "s", "agent": "coder", "run_id": "r1"}, ["decision"])
    context.write("call", tool="t", decision="denied", status="denied")
    context.write("session_start", lock="absent")
    assert lines.lines == [("call", {"server": "s", "decision": "denied"}),
                           ("session_start", {"server": "s", "agent": "coder", "run_id": "r1", "lock": "absent"})]


def test_logging_redact_false_turns_off_shapes_never_the_servers_own_secrets() -> None:
    from mcpspec.run.audit import Masker

    shape = "ghp_" + "a" * 36
    masked = Masker(["s3cret-value-1"], shapes=False).mask_text(f"s3cret-value-1 {shape}")
    assert "s3cret-value-1" not in masked and shape in masked
    assert shape not in Masker(["s3cret-value-1"]).mask_text(shape)
