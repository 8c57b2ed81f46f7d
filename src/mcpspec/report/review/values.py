"""Short human spellings of the Plan's numbers: durations, sizes, rates."""

from __future__ import annotations


def duration(seconds: float | None, unlimited: str = "no limit") -> str:
    """``90`` -> ``1m30s``; None -> ``unlimited``."""
    if seconds is None:
        return unlimited
    whole = int(seconds)
    if whole != seconds or whole == 0:
        return f"{seconds:g}s"
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, whole = divmod(whole, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def size(count: int | None, unlimited: str = "no limit") -> str:
    """``536870912`` -> ``512Mi``; None -> ``unlimited``."""
    if count is None:
        return unlimited
    for unit, scale in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale}{unit}"
    return f"{count} bytes"


def number(value: float | None, unlimited: str = "no limit") -> str:
    return unlimited if value is None else f"{value:g}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
