"""The srt target's files and refusals, and VS Code's sandbox block (`--client vscode --via srt`), without running srt.

tests/test_target_srt_real.py runs them under the real srt and attacks them.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess

import pytest

from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import Build, build_plan
from mcpspec.targets.srt.reader import read_build

SPEC = """\
version: 1
project: p
servers:
  files:
    command: [/usr/bin/python3, /srv/app/server.py, "it's $(id)"]
    workdir: {workdir}
    env: {{inherit: [LANG], set: {{MODE: "a b $x"}}}}
    runtime: {{memory: 256Mi, pids: 32}}
    lifecycle: {{max_lifetime: 1h}}
    mounts:
      - {{from: /srv/app, to: /srv/app}}
      - {{from: /srv/data, to: /srv/data, mode: rw}}
      - {{from: /srv/data/keep, to: /srv/data/keep}}
    egress:
      default: deny
      allow: [{allow}]
      deny: ["10.0.0.0/8", "bad.example.com:443"]
"""
VSCODE = BuildOptions(client="vscode", via="srt")


def _build(allow: str = '"api.example.com:443", "*.example.org:*"', workdir: str = "/srv/data", target: str = "srt",
           options: BuildOptions | None = None, spec: str = SPEC) -> Build:
    return build_plan(load_text(spec.format(allow=allow, workdir=workdir), "mcp-sandbox.yaml"), target, options=options)


def _refusals(build: Build) -> list[tuple[str, tuple[str | int, ...]]]:
    return [(r.code, r.path) for r in build.results if r.code == "TG004"]


def test_reads_are_denied_from_the_root_and_writes_go_only_to_rw_mounts() -> None:
    build = _build()
    assert not build.blocked, [r.message for r in build.results if r.severity == "high"]
    settings = json.loads(build.files["files.srt-settings.json"])
    filesystem, network = settings["filesystem"], settings["network"]
    assert filesystem["denyRead"] == [{"path": "/", "literal": True}]
    readable = [entry["path"] for entry in filesystem["allowRead"]]
    assert {"/srv/app", "/srv/data", "/srv/data/keep", "/usr"} <= set(readable) and "/etc" not in readable and "/home" not in readable
    assert [entry["path"] for entry in filesystem["allowWrite"]] == ["/srv/data"]
    assert [entry["path"] for entry in filesystem["denyWrite"]] == ["/srv/data/keep"]  # ro inside rw stays ro
    assert network["allowedDomains"] == ["api.example.com:443", "*.example.org"] and network["strictAllowlist"] is True
    assert network["deniedDomains"] == ["bad.example.com:443"]
    assert {"10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "::/96", "fc00::/7", "fe80::/10"} <= set(network["deniedResolvedAddresses"])
    # Nothing holds the IPv4-mapped block: a range over it would refuse every IPv4 address.
    mapped = ipaddress.ip_network("::ffff:0:0/96")
    assert not any(net.version == 6 and net.overlaps(mapped) for net in map(ipaddress.ip_network, network["deniedResolvedAddresses"]))


def test_the_reader_recovers_what_the_files_grant() -> None:
    grants = read_build(_build().files)["files"]
    assert {(m.target, m.mode) for m in grants.mounts if m.target.startswith("/srv")} == {("/srv/app", "ro"), ("/srv/data", "rw"), ("/srv/data/keep", "ro")}
    assert dict(grants.env_set) == {"MODE": "a b $x", "PATH": "/usr/local/bin:/usr/bin:/bin"} and grants.env_inherit == ("LANG",)
    assert not grants.env_inherit_all and grants.limits.memory == 256 * 2**20 and grants.limits.pids == 32
    assert grants.limits.lifetime == 3600  # timeout asks 10 s early and kills at max_lifetime
    assert not grants.egress.reaches("169.254.169.254") and grants.egress.mode == "proxy"


def test_the_launcher_is_one_shell_program_that_quotes_every_value() -> None:
    script = _build().files["files.sh"]
    assert subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True, check=False).returncode == 0
    assert "'it'\\''s $(id)'" in script and "'MODE=a b $x'" in script and '${LANG+"LANG=$LANG"}' in script
    assert '[ "$(/usr/bin/id -u)" != 0 ] || refuse' in script  # never root


@pytest.mark.parametrize(("allow", "path"), [
    ('"10.1.2.0/24:443"', ("servers", "files", "egress", "allow")),
    ('"192.0.2.10:5432"', ("servers", "files", "egress", "allow")),
])
def test_an_address_entry_is_refused_not_widened(allow: str, path: tuple[str, ...]) -> None:
    build = _build(allow=allow)
    assert build.blocked and [code for code, _ in _refusals(build)] == ["TG004"]
    assert "files.srt-settings.json" not in build.files


@pytest.mark.parametrize(("change", "words"), [
    (("- {{from: /srv/app, to: /srv/app}}", "- {{from: /srv/app, to: /app}}"), "shows host paths only where they are"),
    (("- {{from: /srv/app, to: /srv/app}}", "- {{from: ~/app, to: /srv/app}}"), "a path under ~"),
    (("default: deny", "default: allow"), "cannot allow every destination"),
    (("{{from: /srv/data, to: /srv/data, mode: rw}}", "{{from: /usr/local, to: /usr/local, mode: rw}}"), "where srt finds bubblewrap"),
    (("    command:", "    transport: {{type: http, port: 8100}}\n    command:"), "network namespace of its own"),
])
def test_what_srt_cannot_say_is_refused(change: tuple[str, str], words: str) -> None:
    build = _build(spec=SPEC.replace(*change))
    assert build.blocked and any(words in r.message for r in build.results if r.code == "TG004"), [r.message for r in build.results]


def test_vscode_s_block_denies_back_what_vs_code_adds() -> None:
    build = _build(target="client", options=VSCODE, workdir="/srv/app")
    assert not build.blocked, [r.message for r in build.results if r.severity == "high"]
    config = json.loads(build.files[".vscode/mcp.json"])
    entry, block = config["servers"]["files"], config["sandbox"]
    assert entry["sandboxEnabled"] is True and entry["cwd"] == "/srv/app"
    assert entry["command"] == "/bin/sh" and entry["args"][-3:] == ["/usr/bin/python3", "/srv/app/server.py", "it's $(id)"]
    assert "LANG=${env:LANG}" in entry["args"] and "MODE=a b $x" in entry["args"]
    assert block["filesystem"]["allowWrite"] == ["/srv/data"]
    # VS Code makes ~/.npm and the working directory writable and allows registry.npmjs.org: each denied back.
    assert {"~/.npm", "~/.claude/debug", "/srv/app", "/srv/data/keep"} <= set(block["filesystem"]["denyWrite"])
    assert "registry.npmjs.org" in block["network"]["deniedDomains"]
    assert "~" in block["filesystem"]["denyRead"] and "/srv" not in block["filesystem"]["denyRead"]  # a mount lies in /srv


def test_vscode_s_block_keeps_the_registry_the_spec_allows() -> None:
    build = _build(target="client", options=VSCODE, allow='"registry.npmjs.org:*"')
    block = json.loads(build.files[".vscode/mcp.json"])["sandbox"]
    assert "registry.npmjs.org" not in block["network"]["deniedDomains"] and block["network"]["allowedDomains"] == ["registry.npmjs.org"]


def test_vscode_refuses_what_it_would_expand_or_share() -> None:
    build = _build(target="client", options=VSCODE, spec=SPEC.replace('MODE: "a b $x"', 'MODE: "${{HOME}}"'))
    assert build.blocked and any("expands" in r.message for r in build.results if r.code == "TG004")
    two = SPEC + SPEC.split("servers:\n", 1)[1].replace("  files:", "  other:").replace("mode: rw", "mode: ro")
    build = _build(target="client", options=VSCODE, spec=two)
    assert build.blocked and any("one sandbox block per mcp.json" in r.message for r in build.results if r.code == "TG004")
    assert ".vscode/mcp.json" not in build.files


def test_via_srt_is_vscode_s_alone() -> None:
    with pytest.raises(ValueError, match="--client vscode"):
        _build(target="client", options=BuildOptions(client="cursor", via="srt"))


def test_vscode_s_auto_approval_of_a_tool_that_needs_approval_is_reported() -> None:
    spec = SPEC + "    tools:\n      wipe: {{effects: [destructive], approval: always}}\n"
    build = _build(target="client", options=VSCODE, spec=spec)
    assert any("wipe need a person's approval" in r.message for r in build.results if r.code == "TG003"), [r.message for r in build.results]


def test_vscode_s_registry_on_every_port_is_reported_when_the_spec_allows_one() -> None:
    build = _build(target="client", options=VSCODE, allow='"registry.npmjs.org:443"')
    assert any("registry.npmjs.org on every port" in r.message for r in build.results if r.code == "TG002"), [r.message for r in build.results]
    assert json.loads(build.files[".vscode/mcp.json"])["sandbox"]["network"]["allowedDomains"] == ["registry.npmjs.org:443"]


def test_vscode_s_block_refuses_the_spec_s_denied_addresses_or_reports_them() -> None:
    """VS Code drops deniedResolvedAddresses: a denied address goes in deniedDomains (srt refuses a name resolving to it),
    a denied range it cannot say lowers egress-deny (red team: before, both were silently dropped)."""
    spec = SPEC.replace('"bad.example.com:443"]', '"bad.example.com:443", 203.0.113.7, "2001:db8::7"]', 1)
    assert spec != SPEC
    build = _build(target="client", options=VSCODE, spec=spec)
    denied = json.loads(build.files[".vscode/mcp.json"])["sandbox"]["network"]["deniedDomains"]
    assert {"203.0.113.7", "[2001:db8::7]"} <= set(denied), denied
    assert any("10.0.0.0/8 is not refused" in r.message for r in build.results if r.code == "TG002"), [r.message for r in build.results]


def test_the_reader_reads_a_launcher_whose_values_hold_newlines() -> None:
    """Red team: a value with a newline made the start command span lines, and the reader stopped with a traceback."""
    spec = SPEC.replace('MODE: "a b $x"', 'MODE: "a\\nb \'q\' $(id)", OTHER: "v"')
    grants = read_build(_build(spec=spec).files)["files"]
    assert ("MODE", "a\nb 'q' $(id)") in grants.env_set and ("OTHER", "v") in grants.env_set, grants.env_set
    assert grants.limits.memory == 256 * 2**20 and grants.limits.pids == 32 and not grants.env_inherit_all


def test_the_whole_host_environment_lowers_metadata_blocking() -> None:
    """Red team: srt chains a parent proxy named by HTTP(S)_PROXY in its own environment, and that hop skips srt's
    resolved-address checks; `inherit: all` hands srt the host's."""
    build = _build(spec=SPEC.replace("inherit: [LANG]", "inherit: all"))
    assert any("chain a parent proxy" in r.message for r in build.results if r.code == "TG002"), [r.message for r in build.results]


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "NODE_OPTIONS", "NODE_COMPILE_CACHE", "OPENSSL_CONF", "HOSTALIASES",
                                  "RES_OPTIONS", "https_proxy", "HTTP_PROXY", "RIPGREP_CONFIG_PATH", "GLIBC_TUNABLES", "SRT_DEBUG"])
def test_a_variable_that_steers_srt_on_the_host_is_refused(name: str) -> None:
    """Red team: srt, node and bubblewrap run on the host with the server's environment."""
    set_build = _build(spec=SPEC.replace('MODE: "a b $x"', f'MODE: "a b $x", {name}: /srv/data/x'))
    passed_build = _build(spec=SPEC.replace("inherit: [LANG]", f"inherit: [LANG, {name}]"))
    for build in (set_build, passed_build):
        assert build.blocked and any(name in r.message for r in build.results if r.code == "TG004"), [r.message for r in build.results]
    assert not _build(spec=SPEC.replace('MODE: "a b $x"', 'MODE: "a b $x", NODE_ENV: production')).blocked
