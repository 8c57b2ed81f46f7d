"""What `mcpspec run` costs per tools/call, how many calls a second it carries, and whether its memory
stays flat; writes its section of docs/performance.md.

    python benchmarks/relay_overhead.py            # about 3 minutes on 2 cores
    python benchmarks/relay_overhead.py --quick    # fewer calls, nothing written

Needs what tests/test_run_relay_real.py needs (bwrap, setpriv, /usr/bin/python3 of the test's version).
The server is tests/probe/raw_server.py (hand-written line JSON-RPC, no SDK) in its bubblewrap
sandbox; the client writes raw lines and times each answer. "Direct" is the same server through its
generated bwrap launcher alone (the same sandbox, stdio straight to the client); "relay" is
`mcpspec run` in front of that launcher, with the allowlist, limits and a file audit sink (hash
chained) on. Latency: sequential calls (one in flight). Rate: calls sent at a fixed pace from one
thread while another reads the answers. Memory: the relay's resident set (VmRSS) while 32 calls are
kept in flight.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "probe"))

from report_sections import write_section

ROOT = Path(__file__).resolve().parent.parent
RATE_LIMIT = 600_000  # calls a minute: room for the rate measured, still a rate window to keep
NOTE = " (*)"
REPORT = ROOT / "docs" / "performance.md"
HELLO = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def call(number: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"call {number}"}}}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Peer:
    """A raw-line MCP client of one process: the launcher, or `mcpspec run`."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.out = self.process.stdin
        self.fd = self.process.stdout.fileno()
        self.buffer = b""
        self.send(json.dumps(HELLO).encode() + b"\n" + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.line()

    def send(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def line(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise SystemExit("the server ended")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def answer_id(self) -> int:
        reply = json.loads(self.line())
        if "result" not in reply or reply["result"].get("isError"):
            raise SystemExit(f"a call failed: {reply}")
        return int(reply["id"])

    def rss_mib(self) -> float:
        for row in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) / 1024
        raise SystemExit("no VmRSS")

    def close(self) -> None:
        self.out.close()
        self.process.wait(60)


def latencies(peer: Peer, count: int, first: int) -> list[float]:
    taken = []
    for number in range(first, first + count):
        started = time.perf_counter()
        peer.send(call(number))
        peer.answer_id()
        taken.append(time.perf_counter() - started)
    return taken


def shown(rss: list[float]) -> str:
    return " / ".join(f"{value:.1f}" for value in (rss[0], rss[1], rss[-1])) + " MiB"


def flat(rss: list[float]) -> str:
    """Met when the last nine tenths of the calls grew the relay by less than 5 MiB."""
    return "met" if rss[-1] - rss[1] < 5 else "**not met**"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def paced(peer: Peer, rate: float, seconds: float, first: int) -> tuple[float, float, float]:
    """Calls sent at ``rate`` a second for ``seconds``: (answers a second, p50 and p99 latency)."""
    total = int(rate * seconds)
    sent: dict[int, float] = {}

    def writer() -> None:
        start = time.perf_counter()
        for index in range(total):
            due = start + index / rate
            while (now := time.perf_counter()) < due:
                time.sleep(min(due - now, 0.0005))
            sent[first + index] = time.perf_counter()
            peer.send(call(first + index))

    thread = threading.Thread(target=writer)
    began = time.perf_counter()
    thread.start()
    taken = []
    for _ in range(total):
        number = peer.answer_id()
        taken.append(time.perf_counter() - sent[number])
    elapsed = time.perf_counter() - began
    thread.join()
    return total / elapsed, percentile(taken, 0.5), percentile(taken, 0.99)


def windowed(peer: Peer, count: int, first: int, window: int = 32) -> float:
    """``count`` calls with ``window`` in flight: answers a second."""
    began = time.perf_counter()
    number = first
    for _ in range(min(window, count)):
        peer.send(call(number))
        number += 1
    for _ in range(count):
        peer.answer_id()
        if number < first + count:
            peer.send(call(number))
            number += 1
    return count / (time.perf_counter() - began)


@contextmanager
def specs_and_launcher() -> Iterator[tuple[Path, Path, Path, Path]]:
    """A spec with a rate limit, one without, the first's launcher and its audit log."""
    from harness import Sandbox

    from mcpspec.run.launch import prepared_launcher
    from test_run_relay_real import write_spec

    box = Sandbox()
    try:
        log = box.base / "audit.jsonl"
        specs = [
            write_spec(box, name, "      echo: {effects: []}", server=f"    logging: {{sink: {log}}}\n    limits: {{{rate}call_timeout: 60s}}", script="raw_server.py")
            for name, rate in (("bench", f"requests_per_minute: {RATE_LIMIT}, "), ("unlimited", ""))
        ]
        with prepared_launcher(specs[0], "probe") as launcher:
            yield specs[0], specs[1], Path(launcher.command), log
    finally:
        box.cleanup()


def memory(argv: list[str], calls: int) -> list[float]:
    """The relay's RSS (MiB) after a warm-up, then after each tenth of ``calls``."""
    peer = Peer(argv, dict(os.environ))
    windowed(peer, 1_000, 4_000_000)
    rss = [peer.rss_mib()]
    for tenth in range(10):
        windowed(peer, calls // 10, tenth * (calls // 10))
        rss.append(peer.rss_mib())
    peer.close()
    return rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls; docs/performance.md is not written")
    args = parser.parse_args()
    sequential, rounds, rate_seconds, memory_calls = (300, 1, 2, 5_000) if args.quick else (2_000, 3, 10, 100_000)
    checkpoint = memory_calls // 10
    began = time.monotonic()
    load_before = os.getloadavg()
    run = [sys.executable, "-m", "mcpspec", "run"]
    with specs_and_launcher() as (spec, unlimited, launcher, log):
        direct_p50, direct_p99, relay_p50, relay_p99 = [], [], [], []
        for round_ in range(rounds):  # alternated, so a burst of load elsewhere falls on both
            for name, argv in (("direct", [str(launcher)]), ("relay", [*run, str(spec), "probe", "--run-id", f"lat{round_}"])):
                peer = Peer(argv, {**os.environ, "MCPSPEC_RUN_ID": f"{name}{round_}"})
                latencies(peer, 200, 1_000_000)  # warm up
                taken = latencies(peer, sequential, 0)
                peer.close()
                (direct_p50 if name == "direct" else relay_p50).append(percentile(taken, 0.5) * 1000)
                (direct_p99 if name == "direct" else relay_p99).append(percentile(taken, 0.99) * 1000)
        peer = Peer([*run, str(spec), "probe", "--run-id", "rate"], dict(os.environ))
        windowed(peer, 500, 2_000_000)
        achieved, rate_p50, rate_p99 = paced(peer, 1000, rate_seconds, 0)
        most = windowed(peer, 10_000 if not args.quick else 2_000, 3_000_000)
        peer.close()
        rss = memory([*run, str(spec), "probe", "--run-id", "memory"], memory_calls)
        rss_unlimited = memory([*run, str(unlimited), "probe", "--run-id", "memory"], memory_calls)
        verify_started = time.perf_counter()
        verified = subprocess.run([sys.executable, "-m", "mcpspec", "audit", "verify", str(log)], capture_output=True, text=True, check=False)
        verify_seconds = time.perf_counter() - verify_started
        audit_lines = sum(1 for _ in log.open("rb"))
    load_after = os.getloadavg()
    direct50, direct99, relay50, relay99 = (statistics.median(v) for v in (direct_p50, direct_p99, relay_p50, relay_p99))
    added = relay50 - direct50
    rows = [
        ("tools/call latency, direct to the launcher (p50 / p99)", f"{direct50:.2f} / {direct99:.2f} ms", "", ""),
        ("tools/call latency through `mcpspec run` (p50 / p99)", f"{relay50:.2f} / {relay99:.2f} ms", "", ""),
        ("added by the relay, p50 (p99)", f"{added:.2f} ms ({relay99 - direct99:.2f} ms)", "< 2 ms", "met" if added < 2 else "**not met**"),
        ("calls sent at 1,000/s for " + f"{rate_seconds} s: answered per second (p50 / p99 latency)", f"{achieved:.0f}/s ({rate_p50 * 1000:.1f} / {rate_p99 * 1000:.1f} ms)", ">= 1,000/s", "met" if achieved >= 990 else "**not met**"),
        ("most calls per second (32 in flight)", f"{most:.0f}/s", "", ""),
        (f"relay RSS at start / after {checkpoint:,} / after {memory_calls:,} calls{NOTE}", shown(rss), "flat", flat(rss)),
        ("the same without `requests_per_minute` (no rate window)", shown(rss_unlimited), "flat", flat(rss_unlimited)),
        (f"`mcpspec audit verify` of the memory run's log ({audit_lines:,} lines)", f"{verify_seconds:.2f} s, {'intact' if verified.returncode == 0 else 'BROKEN'}", "", ""),
    ]
    machine_cores = os.cpu_count()
    body = "\n".join([
        "## `mcpspec run`: the relay",
        "",
        "Written by `benchmarks/relay_overhead.py`; do not edit by hand. The server is `tests/probe/raw_server.py`",
        "(line JSON-RPC, no SDK) in its bubblewrap sandbox; the client writes raw lines. *Direct* is the server",
        "through its generated bwrap launcher alone; *relay* is `mcpspec run` in front of it with the allowlist,",
        "limits and a hash-chained file audit sink on. Latencies are of sequential calls "
        f"({sequential:,} per run, the median of {rounds} alternated runs of each).",
        "",
        "| Measure | Figure | Target | Verdict |",
        "|---|---|---|---|",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        f"{machine_cores} cores, Python {sys.version.split()[0]}. Run on {datetime.date.today().isoformat()}, "
        f"{(time.monotonic() - began) / 60:.1f} minutes; load average {' / '.join(f'{v:.1f}' for v in load_before)} before and "
        f"{' / '.join(f'{v:.1f}' for v in load_after)} after, on a machine shared with other jobs.",
        "",
        f"{NOTE.strip()} `limits.requests_per_minute` counts over a sliding minute, keeping the time of each call",
        f"admitted in the last 60 seconds (at most the limit, {RATE_LIMIT:,} here): at 3,000 calls a second that is",
        "up to 180,000 entries, a few MiB that are freed as the minute slides. Without a rate limit nothing",
        "grows with the number of calls.",
    ])  # fmt: skip
    print(body)
    if not args.quick:
        write_section(REPORT, "relay", body)
        print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
