"""Stream large tools/call results through `mcpspec run` and report throughput and the relay's peak RSS.

    python benchmarks/relay_large_result.py --megabytes 10 100 200

Needs what tests/test_run_relay_real.py needs (bwrap, setpriv, /usr/bin/python3 of the test's version).
The server is tests/probe/raw_server.py in its bubblewrap sandbox; the client reads raw lines.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "probe"))


def measure(spec: Path, size: int) -> tuple[float, int]:
    from test_run_relay_real import RUN, peak_rss_kib

    process = subprocess.Popen([*RUN, str(spec), "probe", "--run-id", f"b{size}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}
    process.stdin.write((json.dumps(hello) + "\n").encode())
    process.stdin.flush()
    process.stdout.readline()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "big", "arguments": {"bytes": size}}}
    started = time.monotonic()
    process.stdin.write((json.dumps(call) + "\n").encode())
    process.stdin.flush()
    last = b""
    while not last.endswith(b"\n"):
        chunk = process.stdout.read1(1 << 20)
        if not chunk:
            raise SystemExit("the relay ended the stream early")
        last = chunk
    took = time.monotonic() - started
    peak = peak_rss_kib(process.pid)
    process.stdin.close()
    process.wait(30)
    return took, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, nargs="+", default=[10, 100])
    args = parser.parse_args()
    from harness import Sandbox

    from test_run_relay_real import write_spec

    box = Sandbox()
    try:
        spec = write_spec(box, "bench", "      big: {effects: []}", script="raw_server.py")
        print(f"{'MiB':>6} {'seconds':>8} {'MiB/s':>7} {'relay peak RSS (MiB)':>21}")
        for megabytes in args.megabytes:
            took, peak = measure(spec, megabytes * 1024 * 1024)
            print(f"{megabytes:>6} {took:>8.2f} {megabytes / took:>7.0f} {peak / 1024:>21.1f}")
    finally:
        box.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
