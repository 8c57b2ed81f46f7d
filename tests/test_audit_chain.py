"""The audit hash chain as an attacker with write access to the log file sees it: every edit of a
tamper corpus (a line deleted, reordered, inserted, duplicated, edited, spliced from another run,
a cut tail, bytes that are not UTF-8, a huge line) is found by `mcpspec audit verify`, which names
the right line; a plain chain recomputed by the attacker passes (the documented limit), a keyed one
does not."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from mcpspec.ir.plan import HostPath, LogSink
from mcpspec.run.audit import AuditLog, Masker
from mcpspec.run.audit_verify import Result, render, verify_log
from mcpspec.run.chain import SEALED, Chain, ChainKeyError, anchor, digest
from mcpspec.run.chainkey import chain_key

KEY = b"k" * 32
SPEC = hashlib.sha256(b"version: 1\n").hexdigest()
LAUNCH = b'{"event":"launch","project":"p","server":"s","run_id":"r1","exit_status":0}'
SECRET = "s3cr3t-value-of-the-ops-token"


def write_runs(path: Path, key: bytes | None = None) -> None:
    """Two runs interleaved in one file (two sinks opened on it, as two runs would), with the
    launcher's own line between them; run A: lines 1, 3, 5, 6, 8; run B: 2, 4, 7(launch), 9."""
    sink = LogSink("file", HostPath(str(path), False))
    a = AuditLog(sink, Masker([SECRET]), chain=Chain(SPEC, key))
    b = AuditLog(sink, Masker([SECRET]), chain=Chain(SPEC, key))
    a.write("session_start", spec="x.yaml")
    b.write("session_start", spec="x.yaml")
    a.write("call", tool="read", status="ok", token=SECRET)
    b.write("call", tool="write", status="denied")
    a.write("call", tool="read", status="ok")
    a.write("tools_listed", shown=["read"])
    with open(path, "ab") as raw:
        raw.write(LAUNCH + b"\n")
    a.write("session_end", status=0)
    b.write("session_end", status=0)
    a.close()
    b.close()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    tmp_path.chmod(0o700)
    path = tmp_path / "audit.jsonl"
    write_runs(path)
    return path


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def verify(data: bytes, key: bytes | None = None, allow_open: bool = False) -> Result:
    return verify_log(io.BytesIO(data), key, allow_open)


def first_broken(result: Result) -> tuple[int, str]:
    assert not result.intact, "the tampering was not found"
    return result.problems[0].line, result.problems[0].message


def reseal(lines: list[bytes], key: bytes | None) -> list[bytes]:
    """What an attacker does after editing: recompute every prev and hash of each run, in order."""
    last: dict[str, str] = {}
    out = []
    for line in lines:
        record = json.loads(line)
        if "chain" not in record:
            out.append(line)
            continue
        chain = record["chain"]
        prefix = SEALED.fullmatch(line)
        assert prefix is not None
        head = prefix.group("prefix").decode()
        previous = last.get(chain) or anchor(key, chain, record["spec_sha256"])
        head = re.sub(r',"prev":"[0-9a-f]{64}"$', f',"prev":"{previous}"', head)
        if record["seq"] == 0:
            head = head.replace('"alg":"hmac-sha256"', '"alg":"sha256"') if key is None else head
        last[chain] = digest(key, head.encode())
        out.append(f'{head},"hash":"{last[chain]}"}}'.encode())
    return out


def test_an_untouched_log_of_two_interleaved_runs_is_intact(log: Path) -> None:
    result = verify(log.read_bytes())
    assert result.intact, render("log", result)
    assert (result.lines, result.runs, result.ended, result.launcher_lines) == (9, 2, 2, 1)
    assert SECRET not in log.read_text()  # the chain seals the line as written: after masking


# Each edit, and the line the verifier must name first (1-based, in the edited file).
TAMPER: dict[str, tuple[Callable[[list[bytes]], list[bytes]], int, str]] = {
    "a middle line deleted": (lambda ls: ls[:2] + ls[3:], 4, "line(s) missing"),
    "a run's first line deleted": (lambda ls: ls[1:], 2, "starts at seq 1"),
    "two lines of a run swapped": (lambda ls: [ls[0], ls[1], ls[4], ls[3], ls[2], *ls[5:]], 3, "line(s) missing"),
    "a line duplicated": (lambda ls: [*ls[:3], ls[2], *ls[3:]], 4, "duplicated or reordered"),
    "a line edited": (lambda ls: [ls[0], ls[1], ls[2].replace(b'"status":"ok"', b'"status":"no"'), *ls[3:]], 3, "hash does not match"),
    "a line inserted outside the chain": (lambda ls: [*ls[:5], b'{"time":"x","event":"call","tool":"rm"}', *ls[5:]], 6, "outside any run"),
    "a line spliced from another run": (lambda ls: [*ls[:5], ls[3].replace(chain_of(ls[3]), chain_of(ls[0])), *ls[5:]], 6, "hash does not match"),
    "the tail cut (session_end gone)": (lambda ls: ls[:8], 4, "no session_end"),
    "the tail cut mid-line": (lambda ls: [*ls[:8], ls[8][:40]], 4, "no session_end"),
    "a line after the run's end": (lambda ls: [*ls, ls[7]], 10, "after its session_end"),
    "bytes that are not UTF-8": (lambda ls: [ls[0], ls[1], ls[2][:30] + b"\xff\xfe" + ls[2][30:], *ls[3:]], 3, "not UTF-8"),
    "an empty line": (lambda ls: [ls[0], b"", *ls[1:]], 2, "empty line"),
    "a carriage return added": (lambda ls: [ls[0] + b"\r", *ls[1:]], 1, ""),
    "the chain fields moved": (lambda ls: [ls[0], ls[1], ls[2][:-1] + b',"x":1}', *ls[3:]], 3, "not at the end"),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_each_kind_of_tampering_is_found_at_the_right_line(log: Path, name: str) -> None:
    edit, line, words = TAMPER[name]
    result = verify(b"\n".join(edit(lines_of(log))) + b"\n")
    found, message = first_broken(result)
    assert found == line and words in message, render("log", result)


def chain_of(line: bytes) -> bytes:
    return str(json.loads(line)["chain"]).encode()


def test_the_spliced_line_came_from_the_other_run_and_a_cut_line_is_named_too(log: Path) -> None:
    ls = lines_of(log)
    assert chain_of(ls[0]) != chain_of(ls[3]) and chain_of(ls[0]) == chain_of(ls[2])
    result = verify(b"\n".join([*ls[:8], ls[8][:40]]))  # no final newline either
    assert [(p.line, "not JSON" in p.message) for p in result.problems] == [(4, False), (9, True)]


def test_a_cut_tail_is_only_a_warning_with_allow_open(log: Path) -> None:
    result = verify(b"\n".join(lines_of(log)[:8]) + b"\n", allow_open=True)
    assert result.intact and "no session_end" in result.warnings[0].message


def test_a_plain_chain_recomputed_after_an_edit_passes_the_documented_limit(log: Path) -> None:
    ls = lines_of(log)
    forged = reseal([ls[0], ls[1], ls[2].replace(b'"tool":"read"', b'"tool":"list"'), *ls[3:]], None)
    assert verify(b"\n".join(forged) + b"\n").intact  # without a key or an outside anchor, nothing can tell


def test_a_keyed_chain_cannot_be_recomputed_without_the_key(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    path = tmp_path / "audit.jsonl"
    write_runs(path, KEY)
    ls = lines_of(path)
    assert verify(path.read_bytes(), KEY).intact
    assert "is keyed" in first_broken(verify(path.read_bytes()))[1]  # no key given: not checked, said so
    edited = [ls[0], ls[1], ls[2].replace(b'"status":"ok"', b'"status":"no"'), *ls[3:]]
    assert first_broken(verify(b"\n".join(reseal(edited, b"guess" * 8)) + b"\n", KEY))[0] == 1  # a guessed key breaks line 1
    downgraded = b"\n".join(reseal(edited, None)) + b"\n"  # rewritten as an unkeyed chain
    assert "not keyed" in first_broken(verify(downgraded, KEY))[1]
    # The last line of a run is sealed too: editing it alone is found under the key.
    tail = [*ls[:8], ls[8].replace(b'"status":0', b'"status":3')]
    assert first_broken(verify(b"\n".join(tail) + b"\n", KEY))[0] == 9


def test_a_huge_line_is_reported_in_bounded_memory(log: Path) -> None:
    data = log.read_bytes() + b'{"x":"' + b"a" * (20 * 1024 * 1024) + b'"}\n'
    tracemalloc.start()
    result = verify(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert first_broken(result) == (10, "a line longer than 1024 KiB (no audit line is): not read")
    assert peak < 8 * 1024 * 1024


def test_chain_fields_cannot_be_passed_as_audit_fields(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    log = AuditLog(LogSink("file", HostPath(str(tmp_path / "a.jsonl"), False)), Masker([]), chain=Chain(SPEC))
    with pytest.raises(ValueError, match="prev"):
        log.write("call", prev="0" * 64)
    log.close()


def test_a_bounded_line_stays_within_its_limit_with_the_chain(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    path = tmp_path / "a.jsonl"
    with AuditLog(LogSink("file", HostPath(str(path), False)), Masker([]), max_line_bytes=1024, chain=Chain(SPEC)) as log:
        log.write("call", big="x" * 100_000)
        log.write("call", **{f"f{n}": n for n in range(500)})
    assert all(len(line) + 1 <= 1024 for line in lines_of(path))
    assert verify(path.read_bytes(), allow_open=True).intact


def test_the_command_exits_0_intact_1_broken_2_usage(log: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mcpspec", "audit", "verify"]
    intact = subprocess.run([*command, str(log)], capture_output=True, text=True, timeout=60, check=False)
    assert intact.returncode == 0 and intact.stdout.strip().endswith("intact"), intact
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join(lines_of(log)[:2] + lines_of(log)[3:]) + b"\n")
    done = subprocess.run([*command, str(broken)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and done.stdout.startswith(f"{broken}:4: "), done
    for wrong in ([*command, str(tmp_path / "missing")], [sys.executable, "-m", "mcpspec", "audit", "check", str(log)], [*command, str(log), "--key-env", "NO_SUCH_VAR_AC"]):
        env = {name: value for name, value in os.environ.items() if name != "NO_SUCH_VAR_AC"}
        usage = subprocess.run(wrong, capture_output=True, text=True, timeout=60, check=False, env=env)
        assert usage.returncode == 2 and "Traceback" not in usage.stderr, usage


def test_the_key_file_must_be_private_and_long_enough(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    key = tmp_path / "audit.key"
    key.write_bytes(KEY + b"\n")
    key.chmod(0o600)
    assert chain_key(None, str(key)) == KEY
    for mode in (0o640, 0o604, 0o620):  # others could read it (and forge lines) or choose it
        key.chmod(mode)
        with pytest.raises(ChainKeyError, match="readable by no one else"):
            chain_key(None, str(key))
    key.chmod(0o600)
    (tmp_path / "link.key").symlink_to(key)
    with pytest.raises(ChainKeyError, match="symbolic link"):
        chain_key(None, str(tmp_path / "link.key"))
    with pytest.raises(ChainKeyError):
        chain_key(None, str(tmp_path / "missing.key"))
    short = tmp_path / "short.key"
    short.write_bytes(b"too short")
    short.chmod(0o600)
    with pytest.raises(ChainKeyError, match="shorter than 16"):
        chain_key(None, str(short))
    with pytest.raises(ChainKeyError, match="not both"):
        chain_key("SOME_VAR", str(key))
    path = tmp_path / "keyed.jsonl"
    write_runs(path, KEY)
    done = subprocess.run([sys.executable, "-m", "mcpspec", "audit", "verify", str(path), "--key-file", str(key)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("intact"), done


def test_any_single_byte_changed_in_a_chained_line_is_found_and_never_a_traceback(log: Path) -> None:
    rng = random.Random(27)
    data = log.read_bytes()
    launch = data.index(LAUNCH)
    positions = [n for n in range(len(data)) if not launch <= n <= launch + len(LAUNCH)]  # the launcher's line is not evidence
    for position in rng.sample(positions, 400):
        value = rng.choice([byte for byte in range(256) if byte != data[position]])
        edited = data[:position] + bytes([value]) + data[position + 1 :]
        result = verify(edited)
        assert not result.intact, (position, value)
        assert data.count(b"\n", 0, position) + 1 >= result.problems[0].line or value == 10, (position, value)
