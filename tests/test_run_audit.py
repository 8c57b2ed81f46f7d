"""The audit log of `mcpspec run`: secrets (read as the launcher reads them) and secret-shaped
strings masked, lines bounded whatever a field holds (a 100 MB one), whole lines under
concurrent writers, a file sink under the launcher's rules (a planted symbolic or hard link is
refused), and a real journald-protocol datagram socket."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from mcpspec import api
from mcpspec.ir.plan import HostPath, LogSink
from mcpspec.run.audit import AuditError, AuditLog, Masker, bounded_json

SECRET = "s3cr3t-value-of-the-ops-token"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def file_sink(path: Path) -> LogSink:
    return LogSink("file", HostPath(str(path), False))


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------- masking


def test_the_masker_hides_secret_values_in_every_spelling_and_secret_shaped_strings() -> None:
    masker = Masker([SECRET, PEM, 'quo"te\\value', "abc"])
    assert masker.mask_text(f"a {SECRET} b {TOKEN}") == "a **** b ghp_****"
    body = PEM.splitlines()[1]
    assert body not in masker.mask_text(f"line: {body}")  # one line of a key, quoted on its own
    assert masker.mask_text(json.dumps({"v": 'quo"te\\value'})) == '{"v": "****"}'  # as JSON text spells it
    assert masker.mask_text("abc") == "abc"  # too short to tell from ordinary text
    value = {SECRET: [TOKEN, 3, None, {"k": f"x{SECRET}x"}], "n": 1.5}
    assert masker.mask(value) == {"****": ["ghp_****", 3, None, {"k": "x****x"}], "n": 1.5}
    assert Masker([], shapes=False).mask_text(TOKEN) == TOKEN


def test_the_masker_of_a_server_reads_its_secrets_as_the_launcher_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret_file = tmp_path / "db-password"
    secret_file.write_text("file-secret-value-1234\n")
    secret_file.chmod(0o600)
    monkeypatch.setenv("OPS_TOKEN", SECRET)
    plan = api.load_text(f"""\
version: 1
project: audit
secrets:
  token: {{provider: env, ref: OPS_TOKEN}}
  db: {{provider: file, ref: {secret_file}}}
servers:
  ops:
    command: [ops-mcp]
    secrets:
      - {{use: token, as: {{env: TOKEN}}}}
      - {{use: db, as: {{file: /run/secrets/db}}}}
""")
    masker = Masker.for_sandbox(plan.servers["ops"])
    assert masker.mask_text(f"{SECRET} and file-secret-value-1234") == "**** and ****"
    monkeypatch.delenv("OPS_TOKEN")  # unreadable: the launcher refuses to start, the masker skips it
    assert Masker.for_sandbox(plan.servers["ops"]).mask_text("file-secret-value-1234") == "****"


# ---------------------------------------------------------------- lines


def test_a_file_sink_gets_one_masked_json_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(file_sink(path), Masker([SECRET])) as log:
        log.write("session_start", server="ops", agent="claude", run_id="run-1")
        log.write("call", tool="deploy", arguments={"token": SECRET, "note": f"see {TOKEN}"}, duration_ms=12, status="ok")
    first, second = lines(path)
    assert TIME.match(str(first["time"])) and first["event"] == "session_start" and first["server"] == "ops"
    assert list(second)[:2] == ["time", "event"]
    assert second["arguments"] == {"token": "****", "note": "see ghp_****"} and "truncated" not in second
    assert SECRET not in path.read_text() and TOKEN not in path.read_text()
    assert (path.stat().st_mode & 0o777) == 0o600
    with AuditLog(file_sink(path), Masker([])) as log:  # appends
        log.write("session_end")
    assert [line["event"] for line in lines(path)] == ["session_start", "call", "session_end"]
    with AuditLog(file_sink(path), Masker([SECRET])) as log:  # not JSON: its text, masked
        log.write("error", error=RuntimeError(f"bad token {SECRET}"), where=Path("/srv") / SECRET)
    assert lines(path)[-1] == {"time": lines(path)[-1]["time"], "event": "error", "error": "bad token ****", "where": "/srv/****"}
    with pytest.raises(ValueError, match="time"):
        AuditLog(file_sink(path), Masker([])).write("x", time="forged")


def test_a_100_mb_field_gives_a_bounded_valid_line_in_bounded_memory_and_time(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    huge = "x" * (100 * 1024 * 1024)
    log = AuditLog(file_sink(path), Masker([SECRET]), max_line_bytes=4096)
    tracemalloc.start()
    started = time.monotonic()
    log.write("call", tool="fetch", result=huge, note=f"{SECRET} kept", nested={"a": [huge, "small"]})
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    log.close()
    raw = path.read_bytes()
    assert len(raw) <= 4096 and raw.endswith(b"\n") and raw.count(b"\n") == 1
    [line] = lines(path)
    assert line["truncated"] is True and line["tool"] == "fetch" and line["note"] == "**** kept"
    assert str(line["result"]).startswith("xxx")
    assert peak < 2 * 1024 * 1024, f"{peak} bytes allocated for one line"
    assert elapsed < 2, f"{elapsed:.2f}s for one line"


def test_a_secret_at_the_cut_is_masked_whole_not_left_half_visible(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    for offset in range(900, 1100, 7):
        field = "y" * offset + SECRET + "z" * 3000
        with AuditLog(file_sink(path), Masker([SECRET]), max_line_bytes=1024) as log:
            log.write("call", result=field)
    with AuditLog(file_sink(path), Masker([SECRET]), max_line_bytes=1024) as log:
        # The third string is cut by the line's total budget, in the middle of the secret, and is
        # short enough to survive the final cut (the larger strings are cut first).
        log.write("call", a="z" * 1023, b="z" * 1000, c="yyyyy" + SECRET)
    text = path.read_text()
    assert json.loads(text.splitlines()[-1])["c"].startswith("yyyyy*")
    assert all(SECRET[:8] not in line for line in text.splitlines())
    assert all(len(line) < 1024 for line in text.splitlines())


def test_a_line_of_many_small_fields_names_what_it_omitted() -> None:
    record = {"time": "t", "event": "call", "tool": "x", "items": [str(i) for i in range(10000)]}
    text = bounded_json(record, 256)
    assert len(text) <= 256
    line = json.loads(text)
    assert line["truncated"] is True and line["omitted"] == ["items"] and line["tool"] == "x"


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    logs = [AuditLog(file_sink(path), Masker([])) for _ in range(2)]  # two descriptors, as two runs would have

    def writer(log: AuditLog, tag: str) -> None:
        for i in range(25):
            log.write("call", writer=tag, index=i, result=tag * 60000)

    threads = [threading.Thread(target=writer, args=(log, tag)) for log, tag in zip(logs * 2, "abcd", strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    found = lines(path)
    assert len(found) == 100
    assert all(set(str(line["result"])) == {str(line["writer"])} for line in found)


# ---------------------------------------------------------------- the file sink's rules


def test_a_planted_symbolic_link_at_the_sink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("")
    victim.chmod(0o600)
    (tmp_path / "audit.jsonl").symlink_to(victim)
    with pytest.raises(AuditError, match="symbolic link"):
        AuditLog(file_sink(tmp_path / "audit.jsonl"), Masker([]))
    assert victim.read_text() == ""


def test_a_planted_hard_link_at_the_sink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("")
    victim.chmod(0o600)
    os.link(victim, tmp_path / "audit.jsonl")
    with pytest.raises(AuditError, match="single link"):
        AuditLog(file_sink(tmp_path / "audit.jsonl"), Masker([]))
    assert victim.read_text() == ""


def test_a_sink_others_may_write_or_swap_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(AuditError, match="another user can write to its directory"):
        AuditLog(file_sink(shared / "audit.jsonl"), Masker([]))
    open_file = tmp_path / "open.jsonl"
    open_file.write_text("")
    open_file.chmod(0o666)
    with pytest.raises(AuditError, match="writable by no one else"):
        AuditLog(file_sink(open_file), Masker([]))
    linked_dir = tmp_path / "via"
    linked_dir.symlink_to(shared)
    if os.geteuid() == 0:  # root follows only links root owns; this one is root's, so the directory rule decides
        with pytest.raises(AuditError):
            AuditLog(file_sink(linked_dir / "audit.jsonl"), Masker([]))


def test_a_sink_in_the_home_directory_is_read_against_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with AuditLog(LogSink("file", HostPath("logs.jsonl", True)), Masker([])) as log:
        log.write("session_start")
    assert lines(tmp_path / "logs.jsonl")[0]["event"] == "session_start"


# ---------------------------------------------------------------- stderr and the journal


def test_the_stderr_sink_writes_whole_lines(capfd: pytest.CaptureFixture[str]) -> None:
    with AuditLog(LogSink("stderr"), Masker([SECRET])) as log:
        log.write("call", note=SECRET)
    err = capfd.readouterr().err
    assert json.loads(err)["note"] == "****" and err.endswith("\n")


def test_the_journal_sink_speaks_journalds_native_protocol(tmp_path: Path) -> None:
    address = str(tmp_path / "journal.socket")
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(address)
    journal.settimeout(5)
    try:
        with AuditLog(LogSink("journal"), Masker([SECRET]), journal_socket=address) as log:
            log.write("call", tool="deploy", note=f"{SECRET}\nsecond line")
            datagram = journal.recv(1 << 20).decode("ascii")
    finally:
        journal.close()
    entry = dict(line.split("=", 1) for line in datagram.rstrip("\n").split("\n"))
    assert entry["SYSLOG_IDENTIFIER"] == "mcpspec-run" and entry["PRIORITY"] == "6" and entry["MCPSPEC_EVENT"] == "call"
    assert json.loads(entry["MESSAGE"])["note"] == "****\nsecond line"
    assert SECRET not in datagram


def test_without_journald_the_journal_sink_falls_back_to_stderr_with_one_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with AuditLog(LogSink("journal"), Masker([]), journal_socket=str(tmp_path / "absent")) as log:
        log.write("a")
        log.write("b")
    err = capfd.readouterr().err.splitlines()
    assert len([line for line in err if "no journald socket" in line]) == 1
    assert [json.loads(line)["event"] for line in err if line.startswith("{")] == ["a", "b"]


@pytest.mark.parametrize("unit", ["a", "eyJ", "eyJabcdefgh.", "-----BEGIN ", "a://", "a://b:", "sk-", "xoxb-"])
def test_masking_text_a_server_controls_takes_linear_time(unit: str) -> None:
    # What a hostile server may return, up to the size one line ever masks, with the markers that
    # make redact() run its pattern at all.
    text = unit * (200_000 // len(unit)) + " :// eyJ"
    started = time.monotonic()
    Masker([SECRET]).mask_text(text)
    assert time.monotonic() - started < 2.0, f"{unit!r} repeated: secret-shape matching went quadratic"
