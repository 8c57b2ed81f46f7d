"""What the fuzz tests share: how many cases they run, and mutations of parsed documents."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# CI runs the same cases every time (derandomized); MCPSPEC_FUZZ_EXAMPLES=5000 fuzzes longer.
EXAMPLES = int(os.environ.get("MCPSPEC_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``data`` (mapping keys and list indexes), each parent before its children."""
    found: list[tuple[Any, ...]] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found.append((*prefix, key))
        found.extend(paths(value, (*prefix, key)))
    return found


def mutate(draw: st.DrawFn, data: Any, values: st.SearchStrategy[Any], new_keys: list[str]) -> Any:
    """A copy of ``data`` with one to five changes: a value replaced by one of ``values``, a key
    dropped, a key of ``new_keys`` added to a mapping, or a value emptied."""
    data = json.loads(json.dumps(data, default=str))
    for _ in range(draw(st.integers(1, 5))):
        found = paths(data)
        if not found:
            break
        path = draw(st.sampled_from(found))
        parent = data
        for segment in path[:-1]:
            parent = parent[segment]
        action = draw(st.sampled_from(["replace", "replace", "drop", "add", "empty"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "drop":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict) and new_keys:
            parent[draw(st.sampled_from(new_keys))] = draw(values)
        elif action == "empty":
            value = parent[path[-1]]
            parent[path[-1]] = type(value)() if isinstance(value, (dict, list)) else None
    return data
