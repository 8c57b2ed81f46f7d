from __future__ import annotations

import pytest

from mcpspec.spec.values import check_name, normalize_host_path, normalize_sandbox_path, parse_destination, parse_duration, parse_size


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("15m", 900), ("4h", 14400), ("7d", 604800), ("1h30m", 5400), ("250ms", 0.25)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("value", [15, "15", "15 minutes", "m", "", "1.5h", True, None, "0s", "0m0s"])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


@pytest.mark.parametrize(("text", "size"), [("512Mi", 512 * 2**20), ("1Gi", 2**30), ("500M", 500 * 10**6), ("64B", 64), ("1.5Ki", 1536)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("value", [512, "512", "1GB", "0Mi", "-1Mi", "Mi"])
def test_bad_sizes(value: object) -> None:
    with pytest.raises(ValueError):
        parse_size(value)


@pytest.mark.parametrize(
    ("text", "kind", "host", "port"),
    [
        ("docs.python.org:443", "domain", "docs.python.org", 443),
        ("API.Example.com:8443", "domain", "api.example.com", 8443),
        ("*.readthedocs.io:443", "wildcard", "*.readthedocs.io", 443),
        ("api.example.com:*", "domain", "api.example.com", None),
        ("10.0.0.0/8", "cidr", "10.0.0.0/8", None),
        ("10.1.2.3/8", "cidr", "10.0.0.0/8", None),
        ("10.0.0.5:5432", "cidr", "10.0.0.5/32", 5432),
        ("[fd00:ec2::254]:80", "cidr", "fd00:ec2::254/128", 80),
        ("fd00::/8", "cidr", "fd00::/8", None),
        ("169.254.169.254", "cidr", "169.254.169.254/32", None),
    ],
)
def test_destinations(text: str, kind: str, host: str, port: int | None) -> None:
    parsed = parse_destination(text)
    assert (parsed.kind, parsed.host, parsed.port, parsed.text) == (kind, host, port, text)


@pytest.mark.parametrize(
    "text",
    ["example.com", "*", "*:443", "a.*.example.com:443", "localhost:80", "10.0.0.0/33", "999.1.1.1:80", "x.example.com:0", "x.example.com:70000", "[::1:80", "ex ample.com:443", 443],
)
def test_bad_destinations(text: object) -> None:
    with pytest.raises(ValueError):
        parse_destination(text)


@pytest.mark.parametrize("name", ["fetch", "issues-ro", "a", "a1-b2"])
def test_good_names(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["Fetch", "-a", "a-", "a_b", "1a", "a" * 41, "$(x)", "a b", "a\nb", "a%i", "..", "", "a\n"])
def test_names_that_would_break_file_unit_or_k8s_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        check_name(name)


def test_paths_are_normalized_and_escapes_refused() -> None:
    assert normalize_sandbox_path("/a//b/./c/") == "/a/b/c"
    assert normalize_host_path("~/.ssh/") == "~/.ssh"
    assert normalize_host_path("~") == "~"
    for bad in ("relative/x", "/a/../b", "~/../etc", "/a\nb", "~user/x", ""):
        with pytest.raises(ValueError):
            normalize_host_path(bad)
