"""A spec's file name reaches every generated file (the header comments): no name may add a live line.

Each example is saved under hostile names and built for every target; the files
must differ from a build under a plain name only inside comment lines. Python
parses each launcher to the same statements and squid parses each squid.conf, processing
exactly the generated directives and nothing else.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, require_tool, run_cli
from mcpspec.api import load
from mcpspec.targets import TARGET_NAMES
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import MANIFEST, build_plan
from mcpspec.targets.comments import comment_line, comment_text, uncomment_text
from mcpspec.targets.egress import EgressPlan, squid_config

HOSTILE = (
    "x\ntouch PWNED\nhttp_access allow all\n#.yaml",
    "cr\rhttp_access allow all\r.yaml",
    "ls\u2028http_access allow all\u2029touch PWNED.yaml",
    "nel\x85vt\x0bff\x0cfs\x1chttp_access allow all.yaml",
    "%n %i %% ${HOME} $(touch PWNED) `touch PWNED`.yaml",
    "quote'\"both\".yaml",
    "back\\slash\\.yaml",
    "esc\x1b[31mred\x07.yaml",
    "bidi\u202eevil\u2066.yaml",
    "trailing-backslash\\",
    "#;[Service]\nExecStartPre=touch PWNED\n.yaml",
    "long-" + "\n" * 120 + "x" * 100 + ".yaml",
    "coding:shift_jis(1).yaml",  # an encoding declaration, were it on line 1 or 2 of a Python file
)
# The client target writes one client's config, for a spec path it is given (a fixed one here, so the file's
# name reaches only comments; the command line below passes the hostile path itself).
NEEDED = {"client": BuildOptions(client="claude-code", spec_path="/srv/mcp/mcp-sandbox.yaml"), "cedar": BuildOptions(sandbox="bwrap")}
# Examples whose build emits files for every target (a refused value would leave some out).
SPECS = [path for path in EXAMPLES if path.stem != "risky"]


def _live(text: str) -> list[str]:
    """The lines a shell, squid or systemd acts on: everything but comments and blank lines."""
    return [line for line in text.split("\n") if line.strip() and not line.lstrip().startswith(("#", ";"))]


def _build(spec: Path, name: str, target: str, tmp_path: Path) -> dict[str, str]:
    path = tmp_path / name
    path.write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    return build_plan(load(path, str(path)), target, options=NEEDED.get(target)).files


@pytest.mark.parametrize("target", TARGET_NAMES)
@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_a_hostile_file_name_changes_only_comment_lines(spec: Path, target: str, tmp_path: Path) -> None:
    plain = _build(spec, "plain.yaml", target, tmp_path)
    for name in HOSTILE:
        built = _build(spec, name, target, tmp_path)
        assert sorted(built) == sorted(plain)
        for file, text in built.items():
            if file == MANIFEST:
                assert json.loads(text)["spec"] == name.replace("\\", "/").rsplit("/", 1)[-1]
                continue
            assert _live(text) == _live(plain[file]), f"{file} under {name!r}"
            for line in text.split("\n"):
                assert "PWNED" not in line or line.startswith("#"), line
            if file.endswith(".py"):  # the launcher starts with comments only, up to its first statement
                lines = text.split("\n")
                head = lines[1 : next(i for i, line in enumerate(lines) if line.startswith("import _signal"))]
                assert all(line.startswith("#") or not line for line in head), head


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_python_and_squid_read_exactly_the_generated_lines(target: str, tmp_path: Path) -> None:
    squid = require_tool("squid")
    spec = next(path for path in SPECS if path.stem == "coding-agent")
    for name in HOSTILE:
        built = _build(spec, name, target, tmp_path)
        for file, text in built.items():
            if file.endswith(".py"):  # Python reads the same statements as under a plain name
                plain = _build(spec, "plain.yaml", target, tmp_path)[file]
                # From bytes, as Python reads a file: an encoding declaration in it would apply.
                assert ast.dump(ast.parse(text.encode("utf-8"))) == ast.dump(ast.parse(plain.encode("utf-8")))
            if file.endswith(".squid.conf"):
                assert _squid_directives(squid, text, tmp_path) == _live(_parseable(text))


def _parseable(text: str) -> str:
    """A squid.conf squid -k parse accepts as it is: the bwrap launcher adds the port and the ACL of the
    host's addresses, systemd's names its own port (and reads that ACL from a file, absent here: squid
    reports it and parses on)."""
    return text if "http_port" in text else "http_port 127.0.0.1:3128\nacl host_addresses dst 0.0.0.0/32\nacl proxy_port port 3128\n" + text


def _squid_directives(squid: str, text: str, tmp_path: Path) -> list[str]:
    """The lines squid itself processed (its debug output names each one)."""
    conf = tmp_path / "squid.conf"
    conf.write_text(_parseable(text), encoding="utf-8")
    parsed = subprocess.run([squid, "-k", "parse", "-d", "2", "-f", str(conf)], capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr[-2000:]
    assert "unrecognized" not in parsed.stderr and "WARNING" not in parsed.stderr, parsed.stderr[-2000:]
    return [m.group(1) for m in re.finditer(r"\| Processing: (.*)$", parsed.stderr, re.MULTILINE)]


def test_a_comment_longer_than_squid_reads_at_once_is_folded_into_comment_lines(tmp_path: Path) -> None:
    """squid reads 8 KiB of a line at a time; the rest of a longer comment would be a live line."""
    squid = require_tool("squid")
    text = squid_config(EgressPlan("proxy", (), (), "allow"), ["x" * 8100 + "http_access allow all", "\u00e9" * 5000 + "acl a src all"], [])
    assert all(len(line.encode()) <= 8000 for line in text.split("\n"))
    assert _squid_directives(squid, text, tmp_path) == _live(_parseable(text))


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_building_a_hostile_name_never_raises(target: str, tmp_path: Path) -> None:
    """The command line: no internal error, whatever the name; what it refuses is a positioned finding."""
    spec = next(path for path in SPECS if path.stem == "coding-agent")
    for index, name in enumerate(HOSTILE):
        path = tmp_path / name
        path.write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
        client = ["--client", "claude-code"] if target == "client" else []
        done = run_cli("build", str(path), "--target", target, *client, "--out", str(tmp_path / f"out-{target}-{index}"), cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
        assert "internal error" not in done.stderr
        if done.returncode == 1:  # refused: every finding names the file, line and column
            findings = [line for line in done.stderr.splitlines() if re.search(r":\d+:\d+: [A-Z]{2}\d{3} ", line)]
            assert findings, done.stderr


ESCAPED = {"Cc", "Cf", "Zl", "Zp", "Cs"}


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=80))
def test_any_text_becomes_one_comment_line_and_comes_back(text: str) -> None:
    line = comment_line(text)
    assert len(line.splitlines()) == 1 and line.startswith("#")
    assert not any(unicodedata.category(char) in ESCAPED for char in line)
    line.encode("utf-8")  # no lone surrogate: the file can be written
    assert uncomment_text(comment_text(text)) == text


@pytest.mark.parametrize("value", ["/run/a b/squid.pid", "/tmp/x\nhttp_access allow all", '"/etc/passwd"', "/run/${HOME}/x", "", "/x" * 3000])
def test_a_launcher_path_squid_cannot_carry_is_refused(value: str) -> None:
    from mcpspec.targets.egress import squid_word
    from mcpspec.targets.escape import Unrepresentable

    with pytest.raises(Unrepresentable):
        squid_word(value)
    assert squid_word("/run/mcp-demo/egress.sock") == "/run/mcp-demo/egress.sock"
