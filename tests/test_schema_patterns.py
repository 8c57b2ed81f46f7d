"""The JSON Schema's patterns are never wider than the parsers they restate.

Every string one edit away from a valid or refused value that the pattern matches must parse; a list of valid values must match
(so a pattern is not narrower for what people write). Both regex dialects are used
by the committed schema's consumers: Python's re here, ECMA-262 in check-jsonschema
(tests/test_schema_agreement.py runs that one).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from mcpspec.diagnostics import parse_path
from mcpspec.ir.resolve import _SECRET_REF
from mcpspec.spec import patterns
from mcpspec.spec.models import NULL_LIFTS, Spec, SpecModel
from mcpspec.spec.values import (
    DURATION_PATTERN,
    SIZE_PATTERN,
    normalize_host_path,
    normalize_sandbox_path,
    parse_destination,
    parse_duration,
    parse_size,
)


def _ip(value: str) -> None:
    import ipaddress

    ipaddress.ip_address(value)


def _sink(value: str) -> None:
    if value not in ("stderr", "journal"):
        normalize_host_path(value)


def _workspace_or(check: Callable[[str], object]) -> Callable[[str], None]:
    def parse(value: str) -> None:
        if not value.startswith("workspace."):
            check(value)

    return parse


PARSERS: dict[str, tuple[str, Callable[[str], object], list[str]]] = {
    "egress": (patterns.EGRESS_PATTERN, parse_destination, [
        "docs.python.org:443", "*.readthedocs.io:443", "API.Example.com:*", "10.0.0.0/8", "10.0.0.5:5432",
        "10.0.0.0/8:443", "[fd00::1]:443", "fd00::/8", "::1", "[::ffff:10.0.0.1]:80", "169.254.169.254/32", "a-b.c1:08080",
    ]),
    "duration": (DURATION_PATTERN, parse_duration, ["30s", "15m", "1h30m", "250ms", "7d", "0s1m"]),
    "size": (SIZE_PATTERN, parse_size, ["256Mi", "1Gi", "500M", "1.5Gi", "1B"]),
    "sandbox path": (patterns.SANDBOX_PATH_PATTERN, normalize_sandbox_path, ["/", "/workspace/out", "/a..b/c", "/x/.hidden"]),
    "host path": (patterns.HOST_PATH_PATTERN, normalize_host_path, ["/srv/data", "~", "~/.config/tool", "/a/b..c"]),
    "mount source": (patterns.MOUNT_SOURCE_PATTERN, _workspace_or(normalize_host_path), ["workspace.output", "/srv", "~/x"]),
    "cache": (patterns.CACHE_PATTERN, _workspace_or(normalize_sandbox_path), ["workspace.tmp", "/cache"]),
    "sink": (patterns.SINK_PATTERN, _sink, ["stderr", "journal", "/var/log/mcp/audit.jsonl", "~/audit.jsonl"]),
    "logical path": (patterns.LOGICAL_PATH_PATTERN, parse_path, ["servers.fetch.egress.allow[1]", "a", 'env.set["A.B"]', "x[0][1]", '["a\\"b"].c']),
    "bind": (patterns.IP_ADDRESS_PATTERN, _ip, ["127.0.0.1", "0.0.0.0", "::1", "fe80::1:2", "::ffff:1.2.3.4"]),
}

REFUSED = {
    "egress": ["api.example.com", "*", "*:443", "api.*.example.com:443", "10.0.0.0/33", "example.123:443", "a.com:0", "a.com:65536", "01.2.3.4"],
    "duration": ["0s", "15", "15 minutes", "00m"],
    "size": ["0Mi", "512MB", "512", "0.5B"],
    "sandbox path": ["relative", "/a/../b", "/..", "/a\nb"],
    "host path": ["relative", "~user/x", "/a/..", "~/.."],
    "mount source": ["../x", "/a/../b", "~/../x"],
    "cache": ["~/x", "rel", "/a/.."],
    "sink": ["syslog", "rel/path"],
    "bind": ["localhost", "10.0.0.0/8", "1.2.3"],
    "logical path": [".a", "a..b", "a.[1]", "a b", "a[x]", ""],
}


@pytest.mark.parametrize("name", PARSERS)
def test_pattern_accepts_what_people_write(name: str) -> None:
    pattern, parse, valid = PARSERS[name]
    for value in valid:
        parse(value)
        assert re.search(pattern, value), f"{name} pattern refuses {value!r}, which the linter accepts"


@pytest.mark.parametrize("name", PARSERS)
def test_pattern_refuses_what_the_linter_refuses(name: str) -> None:
    pattern, parse, _ = PARSERS[name]
    for value in REFUSED[name]:
        with pytest.raises(ValueError):
            parse(value)
        assert not re.search(pattern, value), f"{name} pattern accepts {value!r}, which the linter refuses"


def _neighbours(value: str) -> set[str]:
    """Every string one edit away from ``value`` over the characters these forms use."""
    alphabet = "0123456789abfz.:/*[]~-_ \nMKiBsmhd"
    found: set[str] = set()
    for i in range(len(value) + 1):
        found.update(value[:i] + ch + value[i:] for ch in alphabet)
        if i < len(value):
            found.add(value[:i] + value[i + 1 :])
            found.update(value[:i] + ch + value[i + 1 :] for ch in alphabet)
    return found


@pytest.mark.parametrize("name", PARSERS)
def test_no_near_miss_passes_the_pattern_but_not_the_parser(name: str) -> None:
    pattern, parse, valid = PARSERS[name]
    compiled = re.compile(pattern)
    wider = []
    for value in {near for seed in valid + REFUSED[name] for near in _neighbours(seed)}:
        if compiled.search(value) and "\n" not in value:
            try:
                parse(value)
            except ValueError:
                wider.append(value)
    assert wider == [], f"the {name} pattern accepts what the linter refuses: {sorted(wider)[:10]}"


@pytest.mark.parametrize("provider", sorted(_SECRET_REF))
def test_secret_references_use_the_schema_patterns(provider: str) -> None:
    assert _SECRET_REF[provider][0].pattern == patterns.SECRET_REF_PATTERNS[provider]


def test_every_field_where_null_lifts_a_limit_exists() -> None:
    models = {model.__name__: model for model in [Spec, *SpecModel.__subclasses__()]}
    for model, field in NULL_LIFTS:
        assert field in models[model].model_fields, f"{model}.{field} in NULL_LIFTS is not a field"
