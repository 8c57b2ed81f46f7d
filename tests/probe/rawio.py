"""Line-delimited JSON-RPC for the hand-written probe servers: send a message, log what arrived."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

LOG = "/workspace/output/received.log"  # the run's rw workspace, when mounted


def log(line: str) -> None:
    try:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(line.rstrip("\n") + "\n")
    except OSError:
        pass


def send(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, object]:
    return {"content": [{"type": "text", "text": value}]}


def logged(stream: Iterable[str]) -> Iterator[str]:
    for line in stream:
        log(line)
        yield line


def requests(lines: Iterable[str]) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """(id, method, params) of each request among ``lines``; anything else is skipped."""
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "id" in message and "method" in message:
            yield message["id"], message["method"], message.get("params") or {}
