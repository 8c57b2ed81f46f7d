"""Argument rules in a real `mcpspec run` session: the SDK client calls the probe server in its
bubblewrap sandbox. The same tool runs unasked inside /workspace/output, goes to the approver
elsewhere, and hostile spellings of a path outside (``..``, a percent-encoded ``..``, fullwidth
solidus) are never let through: the approver denies them, having been told which rule sent them,
and the server's own log proves they never arrived. The audit names the rule, never the path."""

from __future__ import annotations

import json
import sys
from typing import Any

from test_run_relay_real import box, received, session, text_of, workspace, write_spec

__all__ = ["box"]

TOOLS = """\
      write_path:
        effects: [writes_local]
        when:
          - name: output area
            if: {arg: path, glob: /workspace/output/**}
            then: allow
        otherwise: approve
      read_path:
        effects: [reads_private]
        when:
          - {if: {arg: path, glob: /etc/**}, then: refuse}"""
HOSTILE = ["/workspace/output/../../etc/passwd", "/workspace/output/%2e%2e/x", "\uff0fworkspace\uff0foutput\uff0f..\uff0f..\uff0fetc\uff0fpasswd"]
APPROVER = """\
import json, sys
call = json.loads(sys.stdin.read())
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps(call) + "\\n")
sys.exit(0 if call.get("arguments", {}).get("path") == "/scratch/approved.txt" else 1)
"""


def test_a_tool_runs_inside_the_allowed_area_needs_approval_outside_and_hostile_paths_never_pass(box: Any) -> None:
    audit = box.base / "audit-argrules.jsonl"
    spec = write_spec(box, "argrules", TOOLS, server=f"    logging: {{sink: {audit}}}")
    asked = box.base / "argrules-asked.jsonl"
    approver = box.base / "argrules-approver.py"
    approver.write_text(APPROVER, encoding="utf-8")

    async def steps(client: Any) -> Any:
        inside = await client.call_tool("write_path", {"path": "/workspace/output/a.txt", "data": "in"})
        outside = await client.call_tool("write_path", {"path": "/scratch/approved.txt", "data": "asked"})
        hostile = [await client.call_tool("write_path", {"path": path, "data": "x"}) for path in HOSTILE]
        climbing = await client.call_tool("read_path", {"path": "/workspace/output/../../etc/passwd"})
        return inside, outside, hostile, climbing

    inside, outside, hostile, climbing = session(spec, "r1", steps, "--approver", f"{sys.executable} {approver} {asked}")
    assert not inside.is_error and json.loads(text_of(inside))["ok"] is True
    assert (workspace(box, "argrules", "r1") / "output" / "a.txt").read_text(encoding="utf-8") == "in"
    assert not outside.is_error
    for result in hostile:
        assert result.is_error and "denied by policy" in text_of(result)
    assert climbing.is_error and "argument rule when[0]" in text_of(climbing) and "refuses" in text_of(climbing)
    assert received(box, "argrules", "r1") == ["write_path", "write_path"]  # the inside call and the approved one only

    questions = [json.loads(line) for line in asked.read_text(encoding="utf-8").splitlines()]
    assert [q["arguments"]["path"] for q in questions] == ["/scratch/approved.txt", *HOSTILE]  # the inside call asked nobody
    assert all(q["condition"] == "otherwise: approve (no rule of the tool's when caught the call)" and q["mode"] == "always" for q in questions)

    text = audit.read_text(encoding="utf-8")
    assert "passwd" not in text and "approved.txt" not in text and "%2e" not in text  # no argument value
    calls = [line for line in map(json.loads, text.splitlines()) if line["event"] == "call"]
    seen = [(c["tool"], c["decision"], c.get("approver"), c.get("condition")) for c in calls]
    assert seen == [
        ("write_path", "allowed", "policy", "when[0] (output area)"),
        ("write_path", "allowed", "command", "otherwise"),
        *[("write_path", "denied", "command", "otherwise")] * 3,
        ("read_path", "denied", "policy", "when[0]"),
    ]


def test_the_rules_of_this_session_lint_clean_and_the_plan_shows_them_as_written(box: Any) -> None:
    from mcpspec import api
    from mcpspec.report.plan_output import plan_data
    from mcpspec.rules.engine import run_rules
    from mcpspec.rules.registry import find

    plan = api.load(write_spec(box, "argrules-plan", TOOLS))
    rules = [find(code) for code in ("HR005", "HR006", "HR007")]
    assert run_rules(plan, [rule for rule in rules if rule is not None]) == []
    shown = plan_data(plan)["servers"]["probe"]["tools"]["write_path"]
    assert shown["when"]["value"] == [{"name": "output area", "if": {"arg": "path", "glob": "/workspace/output/**"}, "then": "allow"}]
    assert shown["otherwise"] == {"value": "approve", "from": "servers.probe.tools.write_path.otherwise"}


BLOCKLIST = """\
      echo:
        effects: []
        when:
          - {if: {arg: text, prefix: rm}, then: refuse}
        otherwise: allow"""
# Each is what a shell runs as `rm ...` (or shows as rm to whoever reads it): a refuse rule catches them all.
RM_SPELLINGS = [
    " rm -rf /", "\trm -rf /", "\n rm -rf /", "\\rm -rf /", "/bin/rm -rf /", "/usr/bin/rm -rf /", "'rm' -rf /", '"r"m -rf /',
    "r\u200bm -rf /", "\u202erm -rf /", "\uff52\uff4d -rf /", "r\u043c -rf /", "\x00rm -rf /", "rm\x00",
]  # fmt: skip


def test_a_refuse_rule_catches_every_spelling_a_shell_reads_as_the_refused_value(box: Any) -> None:
    """`prefix: rm` with `then: refuse` is a blocklist (HR008 says so): every spelling the relay can tell a
    shell reads as rm is refused before the server; what it cannot tell (`$(printf rm)`) passes, which is
    why HR008 asks for an allow rule on an exact set instead."""
    audit = box.base / "audit-blocklist.jsonl"
    spec = write_spec(box, "blocklist", BLOCKLIST, server=f"    logging: {{sink: {audit}}}")

    async def steps(client: Any) -> Any:
        refused = [await client.call_tool("echo", {"text": text}) for text in RM_SPELLINGS]
        passed = [await client.call_tool("echo", {"text": text}) for text in ("ls -l", "grep rm notes.txt", "$(printf rm) -rf /")]
        return refused, passed

    refused, passed = session(spec, "r1", steps)
    for text, result in zip(RM_SPELLINGS, refused, strict=True):
        assert result.is_error and "argument rule when[0]" in text_of(result), (text, text_of(result))
    assert [json.loads(text_of(result))["text"] for result in passed] == ["ls -l", "grep rm notes.txt", "$(printf rm) -rf /"]
    assert received(box, "blocklist", "r1") == ["echo"] * 3  # no refused spelling reached the server
    from mcpspec import api
    from mcpspec.rules.engine import run_rules
    from mcpspec.rules.registry import find

    rule = find("HR008")
    assert rule is not None and [finding.code for finding in run_rules(api.load(spec), [rule])] == ["HR008"]
