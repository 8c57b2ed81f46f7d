"""Call limits of `mcpspec run`: requests per minute over a sliding minute, per server and per tool."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mcpspec.ir.plan import EffectiveSandbox

WINDOW = 60.0


class RateWindow:
    """At most ``limit`` admissions in any ``WINDOW`` seconds."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.times: deque[float] = deque()

    def full(self, now: float) -> bool:
        while self.times and now - self.times[0] >= WINDOW:
            self.times.popleft()
        return len(self.times) >= self.limit

    def admit(self, now: float) -> None:
        self.times.append(now)


class CallLimiter:
    """The server's rate and each tool's own rate; a call is admitted only when both have room."""

    def __init__(self, sandbox: EffectiveSandbox, clock: Callable[[], float] = time.monotonic) -> None:
        self.sandbox = sandbox
        self.clock = clock
        rate = sandbox.limits.requests_per_minute
        self.server = RateWindow(rate) if rate is not None else None
        self.tools: dict[str, RateWindow] = {}

    def _tool(self, tool: str) -> RateWindow | None:
        rate = self.sandbox.tool_limits(tool).requests_per_minute
        if rate is None:
            return None
        return self.tools.setdefault(tool, RateWindow(rate))

    def admit(self, tool: str) -> str | None:
        """Count one call of ``tool``; or, when a rate is used up, the reason it is refused (nothing counted)."""
        now = self.clock()
        windows = [(window, label) for window, label in ((self.server, "server"), (self._tool(tool), f"tool {tool!r}")) if window is not None]
        for window, label in windows:
            if window.full(now):
                return f"the {label} rate limit of {window.limit} calls per minute is used up"
        for window, _ in windows:
            window.admit(now)
        return None

    def timeout(self, tool: str) -> float | None:
        return self.sandbox.tool_limits(tool).call_timeout
