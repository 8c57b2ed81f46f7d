"""Sets of TCP ports as sorted, disjoint, non-adjacent closed intervals."""

from __future__ import annotations

from collections.abc import Iterable

Ports = tuple[tuple[int, int], ...]

LOW, HIGH = 1, 65535
ALL: Ports = ((LOW, HIGH),)
NONE: Ports = ()


def of(port: int | None) -> Ports:
    """One entry's ports: a single port, or every port for ``None``."""
    return ALL if port is None else ((port, port),)


def union(sets: Iterable[Ports]) -> Ports:
    spans = sorted(span for ports in sets for span in ports)
    out: list[tuple[int, int]] = []
    for low, high in spans:
        if out and low <= out[-1][1] + 1:
            if high > out[-1][1]:
                out[-1] = (out[-1][0], high)
        else:
            out.append((low, high))
    return tuple(out)


def minus(a: Ports, b: Ports) -> Ports:
    """Ports of ``a`` not in ``b``."""
    out: list[tuple[int, int]] = []
    index = 0
    for low, high in a:
        start = low
        while index < len(b) and b[index][1] < start:
            index += 1
        probe = index
        while probe < len(b) and b[probe][0] <= high:
            if b[probe][0] > start:
                out.append((start, b[probe][0] - 1))
            start = max(start, b[probe][1] + 1)
            probe += 1
        if start <= high:
            out.append((start, high))
    return tuple(out)


def text(ports: Ports) -> str:
    """How a message names a set: ``443``, ``8000-8080``, ``*`` for every port, ``none``."""
    if ports == ALL:
        return "*"
    if not ports:
        return "none"
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in ports)
