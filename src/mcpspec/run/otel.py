"""`mcpspec run --otel URL`: one OpenTelemetry span per tools/call, exported as OTLP/HTTP JSON.

Spans are built from the relay's ``call`` audit records (so every call the audit sees is a span, and
nothing the audit leaves out is in one): the tool, decision, status, duration and result size, never
the arguments, their hash, a refusal's text or a secret. They are queued without blocking and posted
in batches by a thread of their own (``POST URL/v1/traces``, ``Content-Type: application/json``): a
slow or dead collector only fills the queue, and what cannot be queued or posted is dropped and
counted in the run's ``otel_export`` audit line. Plain http is refused except to a loopback address;
proxies from the environment are not used and redirects are not followed.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcpspec import __version__
from mcpspec.run.audit import Masker
from mcpspec.run.relay import Audit

TRACES_PATH = "/v1/traces"
BATCH = 128  # spans per POST at most
QUEUE = 4096  # spans waiting at most; more are dropped
INTERVAL = 1.0  # seconds between posts while spans trickle in
POST_TIMEOUT = 2.0
FLUSH_TIMEOUT = 3.0  # seconds the end of a run waits for the last spans
SPAN_KIND_SERVER, STATUS_OK, STATUS_ERROR = 2, 1, 2


class OtelURLError(ValueError):
    """The --otel URL is refused."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def traces_endpoint(url: str) -> str:
    """The URL spans are posted to; OtelURLError when ``url`` is not https, nor http to loopback."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OtelURLError(f"--otel {url!r}: {exc}") from None
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise OtelURLError(f"--otel {url!r}: give an http(s) URL of an OTLP/HTTP collector (http://127.0.0.1:4318)")
    if parts.username is not None or parts.password is not None:
        raise OtelURLError("--otel: a URL with credentials in it is refused (they would show in process listings)")
    if parts.query or parts.fragment:
        raise OtelURLError(f"--otel {url!r}: a query or fragment is refused")
    if parts.scheme == "http" and not _loopback(host):
        raise OtelURLError(f"--otel {url!r}: plain http is refused except to a loopback address (use https, or a collector on this machine)")
    path = parts.path.rstrip("/")
    path = path if path.endswith(TRACES_PATH) else path + TRACES_PATH
    netloc = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{netloc}{f':{port}' if port is not None else ''}{path}"


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # int64 travels as a string in OTLP JSON
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [_attribute(key, value) for key, value in values.items() if value is not None]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: Any, **__: Any) -> None:
        return None  # a 3xx is a failed post: spans never follow a collector elsewhere


class SpanExporter:
    """Queues spans (never blocking) and posts them from a thread; counts what it had to drop."""

    def __init__(self, url: str, resource: Mapping[str, Any], masker: Masker) -> None:
        self.endpoint = traces_endpoint(url)
        self.resource = {"service.name": "mcpspec-run", "service.version": __version__, **resource}
        self.masker = masker
        self.trace_id = secrets.token_hex(16)  # one trace per run; each call is a span in it
        self.exported = 0
        self.dropped = 0
        self.failed_posts = 0
        self._queue: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
        self._thread = threading.Thread(target=self._work, name="mcpspec-otel", daemon=True)
        self._thread.start()

    def record_call(self, fields: Mapping[str, Any]) -> None:
        """A span for one ``call`` audit record (its fields before ``logging.record`` filters them)."""
        end = time.time_ns()
        duration = fields.get("duration_s")
        start = end - int(float(duration) * 1e9) if isinstance(duration, int | float) else end
        tool = self.masker.mask_text(str(fields.get("tool", ""))[:256])
        status = str(fields.get("status", ""))
        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": tool,
            "mcpspec.server": fields.get("server"),
            "mcpspec.decision": fields.get("decision"),
            "mcpspec.approver": fields.get("approver"),
            "mcpspec.status": status,
            "mcpspec.duration_s": float(duration) if isinstance(duration, int | float) else None,
            "mcpspec.result_bytes": fields.get("result_bytes"),
        }
        span = {
            "traceId": self.trace_id,
            "spanId": secrets.token_hex(8),
            "name": f"tools/call {tool}",
            "kind": SPAN_KIND_SERVER,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": _attributes(attributes),
            "status": {"code": STATUS_OK if status == "ok" else STATUS_ERROR},
        }
        self.record(span)

    def record(self, span: dict[str, Any]) -> None:
        with self._lock:
            if self._stopping or len(self._queue) >= QUEUE:
                self.dropped += 1
                return
            self._queue.append(span)
            full = len(self._queue) >= BATCH
        if full:
            self._wake.set()

    def body(self, spans: list[dict[str, Any]]) -> bytes:
        """An ExportTraceServiceRequest in OTLP's JSON encoding."""
        request = {
            "resourceSpans": [{
                "resource": {"attributes": _attributes(self.resource)},
                "scopeSpans": [{"scope": {"name": "mcpspec.run", "version": __version__}, "spans": spans}],
            }]
        }  # fmt: skip
        return json.dumps(request, separators=(",", ":"), ensure_ascii=True).encode("ascii")

    def _take(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]

    def _work(self) -> None:
        while True:
            self._wake.wait(INTERVAL)
            self._wake.clear()
            while batch := self._take():
                self._post(batch)
            if self._stopping:
                return

    def _post(self, batch: list[dict[str, Any]]) -> None:
        request = urllib.request.Request(self.endpoint, data=self.body(batch), method="POST", headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=POST_TIMEOUT) as response:
                response.read(65536)
                ok = 200 <= response.status < 300
        except (OSError, ValueError, urllib.error.HTTPError):
            ok = False
        with self._lock:
            if ok:
                self.exported += len(batch)
            else:
                self.dropped += len(batch)
                self.failed_posts += 1

    def close(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Post what is queued, waiting ``timeout`` seconds at most; what is left is dropped."""
        with self._lock:
            self._stopping = True
        self._wake.set()
        self._thread.join(timeout)
        with self._lock:
            self.dropped += len(self._queue)
            self._queue.clear()

    def summary(self) -> dict[str, Any]:
        with self._lock:
            host = urlsplit(self.endpoint)
            return {"collector": f"{host.scheme}://{host.netloc}", "exported": self.exported, "dropped": self.dropped, "failed_posts": self.failed_posts}


class SpanTap:
    """An audit that passes every line on and makes a span of each ``call``."""

    def __init__(self, inner: Audit, exporter: SpanExporter) -> None:
        self.inner = inner
        self.exporter = exporter

    def write(self, event: str, **fields: Any) -> None:
        self.inner.write(event, **fields)
        if event == "call":
            self.exporter.record_call(fields)
