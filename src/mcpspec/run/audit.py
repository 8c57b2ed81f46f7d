"""The audit log of `mcpspec run`: one bounded JSON line per event, secrets masked, to the server's sink.

A line never holds a secret value the server was given nor a secret-shaped string
(:mod:`mcpspec.redact`), and never exceeds ``max_line_bytes``: the largest strings are
cut and the line says ``"truncated": true``. A file sink is opened with the bwrap
launcher's own rules (:meth:`TrustedPaths.open_append`), and each line is one
``write()`` on an ``O_APPEND`` descriptor, so concurrent writers never interleave.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, LogSink
from mcpspec.redact import MASK, redact
from mcpspec.run.chain import CHAIN_FIELDS, SUFFIX_CHARS, Chain
from mcpspec.targets.bwrap import launcher_secret
from mcpspec.targets.bwrap.runtime import Refusal, TrustedPaths, secret_value

JOURNAL_SOCKET = "/run/systemd/journal/socket"
MIN_SECRET_CHARS = 4  # shorter values would mask common text and protect nothing a guess would not find
MIN_LINE_CHARS = 8  # a line of a multi-line secret (a PEM body) masked on its own from this length
KEY_CHARS = 1024  # longest object key kept in a line
EVENT_CHARS = 200
_CORE = ("time", "event", "truncated")
_FIELD = re.compile(r"[^A-Za-z0-9_./-]")


class AuditError(Exception):
    """The audit sink cannot be opened (the run must not start without its audit log)."""


def _forms(value: str) -> Iterator[str]:
    """The spellings of a secret value that may show up in text: itself, trimmed, JSON-escaped, line by line."""
    yield value
    yield value.strip()
    yield json.dumps(value)[1:-1]
    yield json.dumps(value, ensure_ascii=False)[1:-1]
    for line in value.splitlines():
        if len(line.strip()) >= MIN_LINE_CHARS:
            yield line.strip()


def secret_values(sandbox: EffectiveSandbox) -> list[tuple[str, str]]:
    """The secrets ``sandbox`` is given, by name, read as its bwrap launcher reads them at launch.

    A secret that cannot be read is skipped: the launcher refuses to start without it.
    """
    paths = TrustedPaths()
    values: list[tuple[str, str]] = []
    for grant in sandbox.secrets:
        secret = launcher_secret(grant)
        if secret is None:
            continue
        try:
            values.append((grant.name, secret_value(paths, secret).decode("utf-8", "replace")))
        except (Refusal, OSError):
            continue
    return values


class Masker:
    """Replaces the known secret values, then every secret-shaped string (``shapes``), with a fixed mask."""

    def __init__(self, secret_values: Iterable[str], shapes: bool = True) -> None:
        forms = {form for value in secret_values for form in _forms(value) if len(form) >= MIN_SECRET_CHARS}
        ordered = sorted(forms, key=len, reverse=True)  # the longest spelling wins where two overlap
        self._values = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._shapes = shapes
        self.longest = max(map(len, ordered), default=0)

    @classmethod
    def for_sandbox(cls, sandbox: EffectiveSandbox, shapes: bool = True) -> Masker:
        """A masker of the secrets ``sandbox`` is given, read as its bwrap launcher reads them at launch.

        A secret that cannot be read is skipped: the launcher refuses to start without it.
        The values stay in this object's memory only.
        """
        return cls([value for _, value in secret_values(sandbox)], shapes)

    def mask_text(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(MASK, text)
        return redact(text) if self._shapes else text

    def mask(self, value: Any) -> Any:
        """``value`` (a JSON value) with every string in it, object keys included, masked."""
        if isinstance(value, str):
            return self.mask_text(value)
        if isinstance(value, dict):
            return {self.mask_text(str(key)): self.mask(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask(item) for item in value]
        return value


# ---------------------------------------------------------------- bounded lines


class _Bounded:
    """Masks a JSON value while cutting it down: each string to ``chars`` characters and all of it to
    about ``total``, so the work and memory are bounded whatever the caller passed (a 100 MB result
    costs one slice). A string is masked with ``reach`` more characters than it keeps, then cut: a
    secret that straddles the cut is masked whole first, never left half visible."""

    def __init__(self, masker: Masker, chars: int, total: int) -> None:
        self.masker = masker
        self.chars = chars
        self.left = total
        self.reach = masker.longest + 1024
        self.cut = False

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str | dict | list | tuple | int | float | bool) and value is not None:
            value = str(value)  # a path, an exception: its text is masked and bounded like any other
        if isinstance(value, str):
            keep = max(0, min(len(value), self.chars, self.left))
            self.left -= keep + 1
            if keep == len(value):
                return self.masker.mask_text(value)
            self.cut = True
            return self.masker.mask_text(value[: keep + self.reach])[:keep]
        if isinstance(value, dict):
            return dict(zip(self.items(value.keys(), key=True), self.items(value.values()), strict=False))
        if isinstance(value, list | tuple):
            return list(self.items(value))
        self.left -= 8
        return value

    def items(self, values: Iterable[Any], key: bool = False) -> Iterator[Any]:
        for value in values:
            if self.left <= 0:
                self.cut = True
                return
            yield self(str(value)[:KEY_CHARS]) if key else self(value)


def bounded_mask(masker: Masker, value: Any, chars: int, total: int) -> tuple[Any, bool]:
    """``value`` masked, each string cut to ``chars`` and the whole to about ``total`` characters;
    and whether anything was cut."""
    bounded = _Bounded(masker, chars, total)
    return bounded(value), bounded.cut


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, default=str)


def _strings(value: Any, holder: Any = None, key: Any = None) -> Iterator[tuple[Any, Any, str]]:
    if isinstance(value, str) and holder is not None:
        yield holder, key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, value, name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, value, index)


def bounded_json(record: dict[str, Any], limit: int) -> str:
    """``record`` as compact ASCII JSON of at most ``limit`` characters (``limit`` >= 128).

    Too long, the largest strings are cut first, then whole fields (largest first) become
    null and are named in ``omitted``; either way the record gains ``"truncated": true``.
    ``time`` and ``event`` are kept. The record is changed in place.
    """
    text = _dumps(record)
    if len(text) <= limit:
        return text
    record["truncated"] = True
    body = [key for key in record if key not in _CORE]
    for _ in range(256):
        text = _dumps(record)
        excess = len(text) - limit
        if excess <= 0:
            return text
        leaves = (leaf for key in body for leaf in _strings(record[key], record, key))
        found = max(leaves, key=lambda leaf: len(leaf[2]), default=None)
        if found is None or len(found[2]) <= 16:
            break
        holder, key, longest = found
        encoded = len(_dumps(longest)) - 2
        keep = max(16, encoded - excess)
        holder[key] = longest[: max(16, len(longest) * keep // encoded - 1)]
    omitted: list[str] = []
    record["omitted"] = omitted
    for name in sorted(body, key=lambda name: len(_dumps(record[name])), reverse=True):
        text = _dumps(record)
        if len(text) <= limit:
            return text
        record[name] = None
        omitted.append(name[:64])
    text = _dumps(record)
    if len(text) <= limit:
        return text
    return _dumps({"time": record["time"], "event": str(record["event"])[:64], "truncated": True})


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- sinks


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a pipe or terminal that may be non-blocking (stderr)."""
    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            select.select([], [fd], [], 1.0)


def _journal_socket(path: str) -> socket.socket | None:
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    except OSError:
        return None
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


class AuditLog:
    """Appends one JSON line per event to a ``stderr``, ``file`` or ``journal`` sink."""

    def __init__(
        self,
        sink: LogSink,
        masker: Masker,
        max_line_bytes: int = 65536,
        *,
        journal_socket: str = JOURNAL_SOCKET,
        identifier: str = "mcpspec-run",
        chain: Chain | None = None,
    ) -> None:
        if max_line_bytes < 128 + (SUFFIX_CHARS if chain is not None else 0):
            raise ValueError("max_line_bytes must be at least 128 (and the chain's fields)")
        self.chain = chain  # None: lines are not chained (mcpspec run always chains them)
        self.masker = masker
        self.max_line_bytes = max_line_bytes
        self.identifier = identifier
        self.failures = 0  # lines the sink refused (each also reported once on stderr)
        self._lock = threading.Lock()
        self._fd = -1
        self._journal: socket.socket | None = None
        self._closed = False
        self.kind = sink.kind
        if sink.kind == "file":
            assert sink.path is not None
            self._fd = _open_file(sink_path(sink))
        elif sink.kind == "journal":
            self._journal = _journal_socket(journal_socket)
            if self._journal is None:
                self.kind = "stderr"
                self._warn(f"mcpspec: no journald socket at {journal_socket}: audit lines go to stderr\n")

    def write(self, event: str, **fields: Any) -> None:
        """Append one line: ``time``, ``event``, then ``fields`` (JSON values), masked and bounded."""
        clash = sorted(set(fields) & {*_CORE, "omitted", *(CHAIN_FIELDS if self.chain is not None else ())})
        if clash:
            raise ValueError(f"audit fields may not be named {', '.join(clash)}")
        limit = self.max_line_bytes - 1 - (SUFFIX_CHARS if self.chain is not None else 0)  # the newline, the chain's fields
        record: dict[str, Any] = {"time": utc_now(), "event": self.masker.mask_text(event[:EVENT_CHARS])}
        masked, cut = bounded_mask(self.masker, fields, limit, 2 * limit)
        record.update(masked)
        if cut:
            record["truncated"] = True
        self._emit(bounded_json(record, limit), record["event"])

    def _emit(self, text: str, event: str) -> None:
        with self._lock:
            if self._closed:
                raise ValueError("the audit log is closed")
            # Sealed under the lock: the lines of a run reach the sink in the order of their seq.
            data = ((self.chain.seal(text) if self.chain is not None else text) + "\n").encode("ascii")
            try:
                if self._fd >= 0:
                    written = os.write(self._fd, data)  # O_APPEND: one write, one whole line
                    if written != len(data):
                        raise OSError(f"short write ({written} of {len(data)} bytes)")
                elif self._journal is not None:
                    self._journal.send(self._journal_entry(data, event))
                else:
                    write_all(2, data)
            except OSError as exc:
                self.failures += 1
                if self.failures == 1:
                    self._warn(f"mcpspec: cannot write the audit log ({exc}); this line goes to stderr\n")
                write_all(2, data)

    def _journal_entry(self, data: bytes, event: str) -> bytes:
        """journald's native protocol: KEY=value lines (the JSON line has no newline inside)."""
        return b"".join((
            b"MESSAGE=", data.rstrip(b"\n"), b"\n",
            f"SYSLOG_IDENTIFIER={self.identifier}\nPRIORITY=6\nMCPSPEC_EVENT={_FIELD.sub('_', event)}\n".encode("ascii", "replace"),
        ))

    @staticmethod
    def _warn(text: str) -> None:
        sys.stderr.flush()
        write_all(2, text.encode("utf-8", "replace"))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._journal is not None:
                self._journal.close()
                self._journal = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def sink_path(sink: LogSink) -> str:
    """The absolute path of a file sink (``~/x`` read against HOME, as the launcher reads ``~`` paths)."""
    assert sink.path is not None
    if not sink.path.in_home:
        return sink.path.path
    home = os.environ.get("HOME", "")
    if not home.startswith("/"):
        raise AuditError(f"audit sink {sink}: HOME is not set")
    return home if sink.path.path == "." else os.path.join(home, sink.path.path)


def _open_file(path: str) -> int:
    """The launcher's rules: a regular file with one link, owned by us and writable by no one else, in a
    directory no one else may change, reached without following an untrusted symbolic link."""
    try:
        return TrustedPaths().open_append(path)
    except Refusal as exc:
        raise AuditError(f"audit sink: {exc}") from None
