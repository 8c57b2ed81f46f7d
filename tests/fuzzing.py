"""What the fuzz tests share: how many cases they run, and mutations of parsed documents."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from conftest import REPO

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


Values = st.SearchStrategy[Any] | Callable[[Any], st.SearchStrategy[Any]]


ACTIONS = ("replace", "replace", "drop", "add", "empty")


def mutate(draw: st.DrawFn, data: Any, values: Values, new_keys: list[str], actions: tuple[str, ...] = ACTIONS, most: int = 5) -> Any:
    """A copy of ``data`` with one to ``most`` changes of ``actions``: a value replaced by one of
    ``values`` (or of ``values(old value)``), a key dropped, a key of ``new_keys`` added to a
    mapping, or a value emptied."""
    data = json.loads(json.dumps(data, default=str))
    # Uniform over the paths: hypothesis draws the first items of a sampled list far more often.
    chance = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(1, most))):
        found = paths(data)
        if not found:
            break
        path = chance.choice(found)
        parent = data
        for segment in path[:-1]:
            parent = parent[segment]
        action = draw(st.sampled_from(actions))
        if action == "replace":
            parent[path[-1]] = draw(values(parent[path[-1]]) if callable(values) else values)
        elif action == "drop":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict) and new_keys:
            parent[draw(st.sampled_from(new_keys))] = draw(values(None) if callable(values) else values)
        elif action == "empty":
            value = parent[path[-1]]
            parent[path[-1]] = type(value)() if isinstance(value, (dict, list)) else None
    return data


SPECS = sorted({*REPO.glob("examples/*.yaml"), *REPO.glob("tests/realistic/*.yaml")})
BASES = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in SPECS]
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.just(""), st.just("*"),
    st.just("@private"), st.just("0.0.0.0/0:443"), st.just("[::]:443"), st.just("../../etc/passwd"), st.just("/"),
    st.just("x\ny"), st.just("$(id)"), st.just("1h"), st.just("0s"), st.just(-1), st.just(2**63),
    st.text(max_size=12), st.lists(st.text(max_size=6), max_size=3), st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
)
# Strings a careless or hostile author writes where a spec expects a name, a path, a host or a command.
ODD_STRINGS = st.one_of(
    st.sampled_from([
        "", "a b", "x\ny", "$(id)", "`id`", "'; rm -rf / #", '"', "\\", "%n%s", "../..", "/", "/etc/shadow", "/home/me/.ssh",
        "~/.aws", "*", "**", "*.example.com:443", "127.0.0.2:8080", "[::1]:443", "0.0.0.0/0:443", "@private", "@metadata",
        "169.254.169.254:80", "名前", "\u202e", "\x00", "-rf", "--privileged", "1h", "0s", "999999h", "0", "rw", "ro", "none",
    ]),
    st.text(max_size=10),
)


def same_type(old: Any) -> st.SearchStrategy[Any]:
    """An odd value of the type ``old`` has, so a mutated spec often stays valid and reaches the rules and targets."""
    if isinstance(old, bool):
        return st.booleans()
    if isinstance(old, int):
        return st.one_of(st.integers(-1, 2**31), st.just(2**63))
    if isinstance(old, str):
        return st.one_of(ODD_STRINGS, st.sampled_from([old + "x", old.upper(), f"{old}/..", f"{old}\n", f"{old} {old}"]))
    if isinstance(old, list):
        return st.one_of(st.lists(ODD_STRINGS, max_size=3), st.just(old + old), st.just(old[::-1]))
    return ODD_VALUES


@st.composite
def mutated_specs(draw: st.DrawFn, keep_types: bool = False) -> str:
    """A real spec with a few values replaced (by odd values, or odd values of the same type), keys
    dropped or added and lists emptied, as YAML."""
    base = draw(st.sampled_from(BASES))
    if keep_types:  # no key dropped or added: the spec has a chance to stay valid
        data = mutate(draw, base, same_type, [], ("replace", "replace", "replace", "empty"), most=2)
    else:
        data = mutate(draw, base, ODD_VALUES, ["extra", "allow", "deny", "mode", "ttl", "scopes", "tools", "effects"])
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
