"""`mcpspec audit verify FILE`: check the hash chains of an audit log (see :mod:`mcpspec.run.chain`).

A log may hold several runs, appended or interleaved (runs that share a file sink). Each run is
its own chain, named by its ``chain`` nonce; its lines must come in ``seq`` order, each naming the
hash of the run's line before, each hash matching the line's bytes, and the run must end with
``session_end``. The bwrap launcher's own ``launch`` lines (written by the launcher into the same
file sink) are outside any chain: they are counted, never trusted. Any other unchained line is an
error. Memory is bounded: a line longer than ``LINE_CAP`` is reported, not held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from mcpspec.run.chain import HEX64, SEALED, algorithm, anchor, digest
from mcpspec.run.framing import FramingError, parse_line

LINE_CAP = 1024 * 1024
MAX_PROBLEMS = 1000  # reported at most; the count says how many there were
CHAIN_ID = re.compile(r"[0-9a-f]{32}")
END_EVENT = "session_end"


@dataclass(frozen=True)
class Problem:
    line: int
    message: str


@dataclass
class _Run:
    chain: str
    first_line: int
    key: bytes | None
    checked: bool = True  # False: a keyed chain and no key, its hashes cannot be checked
    seq: int = -1
    last_hash: str = ""
    last_line: int = 0
    ended: bool = False


@dataclass
class Result:
    lines: int = 0
    runs: int = 0
    ended: int = 0
    launcher_lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    warnings: list[Problem] = field(default_factory=list)
    # Per run: its chain, first line, last line, last seq and hash, ended (compare with what
    # `mcpspec run` printed on stderr at the end of the run).
    tails: list[tuple[str, int, int, int, str, bool]] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return self.problem_count == 0


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes without the newline), or None for a line longer than LINE_CAP (skipped whole)."""
    number = 0
    while True:
        piece = stream.readline(LINE_CAP + 1)
        if not piece:
            return
        number += 1
        if len(piece) > LINE_CAP and not piece.endswith(b"\n"):
            while piece and not piece.endswith(b"\n"):
                piece = stream.readline(LINE_CAP)
            yield number, None
            continue
        yield number, piece[:-1] if piece.endswith(b"\n") else piece


class Verifier:
    """Reads a log line by line and keeps, per run, what the next line of that run must show."""

    def __init__(self, key: bytes | None, allow_open: bool = False) -> None:
        self.key = key
        self.allow_open = allow_open
        self.runs: dict[str, _Run] = {}
        self.result = Result()

    def problem(self, line: int, message: str) -> None:
        self.result.problem_count += 1
        if len(self.result.problems) < MAX_PROBLEMS:
            self.result.problems.append(Problem(line, message))

    def verify(self, stream: IO[bytes]) -> Result:
        for number, raw in _lines(stream):
            self.result.lines = number
            if raw is None:
                self.problem(number, f"a line longer than {LINE_CAP // 1024} KiB (no audit line is): not read")
            else:
                self.line(number, raw)
        for run in self.runs.values():
            if not run.ended:
                text = (
                    f"run {run.chain} (first line {run.first_line}) has no {END_EVENT} after this line: the log was cut here, "
                    "or the run is still going or was killed"
                )
                (self.result.warnings.append(Problem(run.last_line, text)) if self.allow_open else self.problem(run.last_line, text))
        self.result.problems.sort(key=lambda item: item.line)  # the first broken line first
        self.result.runs = len(self.runs)
        self.result.ended = sum(run.ended for run in self.runs.values())
        self.result.tails = [(run.chain, run.first_line, run.last_line, run.seq, run.last_hash, run.ended) for run in self.runs.values()]
        return self.result

    def line(self, number: int, raw: bytes) -> None:
        if not raw.strip():
            self.problem(number, "an empty line (no audit line is empty)")
            return
        try:
            record = parse_line(raw)
        except FramingError as exc:
            self.problem(number, f"not an audit line: {exc}")
            return
        if not isinstance(record, dict):
            self.problem(number, "not an audit line: not a JSON object")
            return
        if "chain" not in record:
            if record.get("event") == "launch":
                self.result.launcher_lines += 1
            else:
                self.problem(number, "a line outside any run's chain (not written by mcpspec run: inserted?)")
            return
        sealed = SEALED.fullmatch(raw)
        chain, seq = record.get("chain"), record.get("seq")
        if sealed is None or not isinstance(chain, str) or not CHAIN_ID.fullmatch(chain) or type(seq) is not int or seq < 0:
            self.problem(number, "the chain fields are malformed or not at the end of the line (edited)")
            return
        if not isinstance(record.get("prev"), str) or not HEX64.fullmatch(record["prev"]):
            self.problem(number, "the prev field is malformed (edited)")
            return
        run = self.runs.get(chain)
        if run is None:
            run = self.runs[chain] = self.start(number, chain, seq, record)
        elif run.ended:
            self.problem(number, f"a line of run {chain} after its {END_EVENT} (line {run.last_line}): spliced in or duplicated")
            return
        self.link(number, run, seq, record, sealed)

    def start(self, number: int, chain: str, seq: int, record: dict[str, Any]) -> _Run:
        """A run seen for the first time; its first line must be seq 0, anchored on its nonce and spec."""
        run = _Run(chain, number, self.key)
        alg = record.get("alg")
        if seq != 0:
            self.problem(number, f"run {chain} starts at seq {seq}: its first {seq} line(s) are missing")
        elif alg not in ("sha256", "hmac-sha256") or not isinstance(record.get("spec_sha256"), str):
            self.problem(number, f"the first line of run {chain} has no valid alg and spec_sha256 (edited)")
        elif alg == "hmac-sha256" and self.key is None:
            self.problem(number, f"run {chain} is keyed (hmac-sha256): give its key to check it (--key-env)")
            run.checked = False
        elif alg == "sha256" and self.key is not None:
            self.problem(number, f"run {chain} is not keyed though a key was given: anyone could have written it")
            run.key = None
        if seq == 0 and isinstance(record.get("spec_sha256"), str):
            run.last_hash = anchor(run.key, chain, record["spec_sha256"])
        run.seq = seq - 1
        return run

    def link(self, number: int, run: _Run, seq: int, record: dict[str, Any], sealed: re.Match[bytes]) -> None:
        claimed = sealed.group("hash").decode("ascii")
        if run.checked and digest(run.key, sealed.group("prefix")) != claimed:
            self.problem(number, f"the line's hash does not match its content ({algorithm(run.key)}): the line was edited")
        elif seq <= run.seq:
            self.problem(number, f"seq {seq} of run {run.chain} comes after seq {run.seq} (line {run.last_line}): a duplicated or reordered line")
        elif seq > run.seq + 1:
            self.problem(number, f"seq {seq} of run {run.chain} follows seq {run.seq} (line {run.last_line}): {seq - run.seq - 1} line(s) missing")
        elif run.checked and run.last_hash and record["prev"] != run.last_hash:
            before = f"line {run.last_line}" if run.last_line else "the run's anchor"
            self.problem(number, f"prev does not match the hash of {before} of run {run.chain}: a line was removed, inserted or edited")
        run.seq, run.last_hash, run.last_line = seq, claimed, number
        run.ended = record.get("event") == END_EVENT


def verify_log(stream: IO[bytes], key: bytes | None = None, allow_open: bool = False) -> Result:
    return Verifier(key, allow_open).verify(stream)


def render(name: str, result: Result, runs: bool = False) -> str:
    """The report: one ``FILE:LINE: problem`` per problem (the first broken line first), then a summary;
    with ``runs``, first a line per run with its last seq and hash."""
    out = [
        f"{name}:{first}-{last}: run {chain} {'ended' if ended else 'open'} at seq {seq} with hash {last_hash}"
        for chain, first, last, seq, last_hash, ended in (result.tails if runs else [])
    ]
    out += [f"{name}:{item.line}: {item.message}" for item in result.problems]
    out += [f"{name}:{item.line}: warning: {item.message}" for item in result.warnings]
    if result.problem_count > len(result.problems):
        out.append(f"{name}: ... and {result.problem_count - len(result.problems)} more problems")
    verdict = "intact" if result.intact else f"BROKEN ({result.problem_count} problem(s); the first at line {result.problems[0].line})"
    out.append(
        f"{name}: {result.lines} lines, {result.runs} run(s) ({result.ended} ended), "
        f"{result.launcher_lines} launcher line(s) outside the chain: {verdict}"
    )
    return "\n".join(out) + "\n"
