"""The systemd target, checked by the real systemd: `systemd-analyze verify` and
`systemd-analyze security --offline=yes` on every generated unit, and systemd's own
parser (`systemd --test` dumps the loaded units) for escaping.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, require_tool
from mcpspec import api
from mcpspec.ir.plan import Plan
from mcpspec.targets.base import CONTROLS
from mcpspec.targets.build import MANIFEST, Build, build_plan
from mcpspec.targets.seccomp import syscall_policy
from mcpspec.targets.systemd import CAPABILITIES, PROXY_PORT, SHIM, TARGET, USAGE, audit
from mcpspec.targets.systemd.names import run_id_room
from mcpspec.targets.systemd.unitfile import system_call_filter

STEM = "mcp-acme-coding-agent"  # the units of examples/coding-agent.yaml

RUNNABLE = """\
version: 1
project: sd-probe
defaults:
  runtime: {memory: 256Mi, cpus: 0.25, pids: 32}
  lifecycle: {max_lifetime: 90s}
  logging: {audit: true, sink: /var/log/mcp/sd-probe/audit.jsonl}
workspace:
  root: /srv/mcp/workspaces
  dirs:
    input: {mode: ro}
    output: {mode: rw}
    scratch: {mode: rw, tmpfs: true, size: 64Mi}
secrets:
  token: {provider: file, ref: /etc/sd-probe/token}
  cred: {provider: systemd-credential, ref: sd-probe.cred}
servers:
  quiet:
    command: [/usr/bin/python3, -m, http.server]
    workdir: /workspace/output
    env: {set: {LOG_LEVEL: debug}}
    mounts:
      - {from: workspace.input, to: /workspace/input}
      - {from: workspace.output, to: /workspace/output}
      - {from: workspace.scratch, to: /workspace/scratch}
      - {from: /usr/share/doc, to: /docs}
    secrets:
      - {use: token, as: {file: /run/secrets/token}}
      - {use: cred, as: {file: /run/secrets/cred}}
    process: {deny: [curl, /usr/bin/wget]}
  proxied:
    command: [/usr/bin/python3, -c, pass]
    egress: {allow: ["pypi.mirror.acme.example:443", "*.files.mirror.acme.example:443", "10.1.2.0/24:443"]}
    process: {deny: [bash, sh]}
  direct:
    command: [/usr/bin/python3, -c, pass]
    egress: {allow: ["10.40.12.0/28", "192.0.2.7"], via: direct}
    logging: {sink: journal}
  web:
    transport: {type: http, port: 8931}
    command: [/usr/bin/python3, -m, http.server, --bind, 127.0.0.1, "8931"]
    egress: {allow: ["api.example.com:443"]}
  web-closed:
    transport: {type: http, port: 8932}
    command: [/usr/bin/python3, -m, http.server, "8932"]
    logging: {audit: false}
"""

# Every character systemd treats specially in ExecStart= or Environment=: specifiers,
# variables, quotes, backslashes, and a control character.
TRICKY_COMMAND = ["/usr/bin/python3", "-c", "print('100% $HOME \"q\" back\\\\slash')", "a b", "%i", "$$", "${X}", "\\n", "tab\there", "'single'"]
TRICKY_ENV = {"A": '100% $HOME "q" back\\slash', "B": "${X} %n $$ 'x' \\t", "C": "%%i %% $"}


def _quoted_yaml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") + '"'


TRICKY = f"""\
version: 1
project: esc-test
servers:
  tricky:
    description: "Percent 100% and a $VAR"
    command: [{", ".join(_quoted_yaml(word) for word in TRICKY_COMMAND)}]
    env:
      set:
{chr(10).join(f"        {name}: {_quoted_yaml(value)}" for name, value in TRICKY_ENV.items())}
"""


def _build(text: str, tmp_path: Path, name: str = "mcp-sandbox.yaml") -> tuple[Plan, Build]:
    spec = tmp_path / name
    spec.write_text(text, encoding="utf-8")
    plan = api.load(spec, name)
    return plan, build_plan(plan, "systemd")


def _codes(build: Build) -> set[str]:
    return {r.code for r in build.active}


@pytest.fixture
def unit_dir() -> Iterator[Path]:
    # World-readable: `systemd --test` refuses to run as root, so it reads the units as nobody.
    directory = Path(tempfile.mkdtemp(prefix="mcpspec-systemd-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _install(build: Build, directory: Path) -> list[str]:
    """Write the units; a template is also written as instance @test (systemd checks instances).
    Returns the unit names to check."""
    units = []
    for name, text in sorted(build.files.items()):
        (directory / name).write_text(text, encoding="utf-8")
        (directory / name).chmod(0o644)
        if name.endswith(("@.service", "@.socket")):
            instance = name.replace("@.", "@test.")
            (directory / instance).write_text(text, encoding="utf-8")
            (directory / instance).chmod(0o644)
            units.append(instance)
        elif name.endswith((".service", ".socket")):
            units.append(name)
    return units


def _verify(analyze: str, directory: Path, unit: str) -> list[str]:
    """Every line `systemd-analyze verify` prints (it exits 0 on most problems, so its output is the verdict)."""
    result = subprocess.run([analyze, "verify", "--man=no", str(directory / unit)], capture_output=True, text=True, timeout=60, check=False)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    if result.returncode != 0 and not lines:
        lines.append(f"exit status {result.returncode} without a message")
    return lines


def _exposure(analyze: str, directory: Path, unit: str) -> float:
    result = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", str(directory / unit)], capture_output=True, text=True, timeout=60, check=False)
    found = re.search(r"Overall exposure level for \S+: ([0-9]+\.[0-9]+)", result.stdout)
    assert found, f"{unit}: no exposure level in\n{result.stdout}{result.stderr}"
    return float(found.group(1))


def _limit(text: str) -> float:
    return 1.0 if "\nPrivateNetwork=yes\n" in text else 2.0


_MISSING = re.compile(r"^(?P<unit>\S+): Command (?P<command>\S+) is not executable: No such file or directory$")


def _check_units(build: Build, plan: Plan, directory: Path, allow_missing_commands: bool) -> dict[str, float]:
    """Verify and score every unit; returns unit -> exposure. Only a server's own command may be
    missing on this machine, and only where ``allow_missing_commands`` says so."""
    analyze = require_tool("systemd-analyze")
    commands = {f"mcp-{plan.project}_{name}@test.service": s.command[0] for name, s in plan.servers.items() if s.command}
    scores: dict[str, float] = {}
    for unit in _install(build, directory):
        for line in _verify(analyze, directory, unit):
            missing = _MISSING.match(line)
            explained = (
                allow_missing_commands and missing is not None and missing.group("unit") == unit
                and missing.group("command") == commands.get(unit) and shutil.which(missing.group("command")) is None
            )
            assert explained, f"systemd-analyze verify {unit}: {line}"
        if unit.endswith(".service"):
            scores[unit] = _exposure(analyze, directory, unit)
            text = (directory / unit).read_text()
            assert scores[unit] <= _limit(text), f"{unit}: exposure {scores[unit]} > {_limit(text)}"
    return scores


# --- the capability matrix ---


def test_capabilities_cover_exactly_the_controls() -> None:
    assert sorted(CAPABILITIES) == sorted(c.id for c in CONTROLS)
    assert TARGET.capabilities is CAPABILITIES and TARGET.name == "systemd"
    assert all(c.how and c.level in ("full", "partial", "none") for c in CAPABILITIES.values())
    assert "systemctl" in USAGE and "/run/mcp-<project>/<server>.sock" in USAGE


def test_the_shim_waits_for_the_proxy_port_it_starts() -> None:
    assert f"TCP-LISTEN:{PROXY_PORT}," in SHIM
    assert f":{PROXY_PORT:04X} 00000000:0000 0A" in SHIM
    assert "/proc/self/net/tcp" in SHIM  # ProcSubset=pid hides /proc/net
    assert "#" not in SHIM.split("\n", 1)[0]  # comment lines stay in the source


# --- the examples ---


@pytest.mark.parametrize("example", [p for p in EXAMPLES if p.stem != "risky"], ids=lambda p: p.stem)
def test_example_units_pass_systemd_analyze(example: Path, unit_dir: Path) -> None:
    plan = api.load(example, example.relative_to(REPO).as_posix())
    build = build_plan(plan, "systemd")
    assert "TG004" not in _codes(build)
    # The only boundary these examples ask for that systemd cannot give: secrets from vault.
    blocking = [r.message for r in build.active if r.code == "TG001"]
    assert all("not from vault" in message for message in blocking), blocking
    runs_here = [name for name, s in plan.servers.items() if s.runs_here]
    assert runs_here and all(f"mcp-{plan.project}_{name}@.service" in build.files for name in runs_here)
    assert not any(f"mcp-{plan.project}_{name}@.service" in build.files for name, s in plan.servers.items() if not s.runs_here)
    scores = _check_units(build, plan, unit_dir, allow_missing_commands=True)
    assert all(f"mcp-{plan.project}_{name}@test.service" in scores for name in runs_here)


def test_risky_example_fails_with_tg001(unit_dir: Path) -> None:
    example = REPO / "examples" / "risky.yaml"
    plan = api.load(example, "examples/risky.yaml")
    build = build_plan(plan, "systemd")
    messages = [r.message for r in build.active if r.code == "TG001"]
    assert any("~ cannot be resolved" in m for m in messages)
    assert any("not from env" in m for m in messages)
    assert any("transport.bind 0.0.0.0" in m for m in messages)
    assert any("names cannot be enforced by IP rules" in m for m in messages)
    assert "TG004" in _codes(build)  # the shell-string command
    assert not any("_shell@" in name for name in build.files)
    # What it does emit is still a valid, hardened sandbox.
    _check_units(build, plan, unit_dir, allow_missing_commands=True)


def test_coding_agent_files_and_determinism(tmp_path: Path) -> None:
    example = REPO / "examples" / "coding-agent.yaml"
    first = build_plan(api.load(example, "examples/coding-agent.yaml"), "systemd")
    second = build_plan(api.load(example, "examples/coding-agent.yaml"), "systemd")
    assert first.files == second.files
    assert sorted(first.files) == sorted([
        MANIFEST, "acme-coding-agent.tmpfiles.conf", "docs.squid.conf", f"{STEM}_docs_egress.service", f"{STEM}_docs_egress.socket", f"{STEM}_docs_squid.service", f"{STEM}_docs.socket", f"{STEM}_docs@.service",
        "repo.squid.conf", f"{STEM}_repo_egress.service", f"{STEM}_repo_egress.socket", f"{STEM}_repo_squid.service", f"{STEM}_repo.socket", f"{STEM}_repo@.service",
    ])
    assert not first.executable
    for name, text in first.files.items():
        assert str(REPO) not in text and str(tmp_path) not in text, name
        if name != MANIFEST:
            assert text.startswith("# Generated by mcpspec "), name
    repo = first.files[f"{STEM}_repo@.service"]
    assert "RuntimeDirectory=mcp-acme-coding-agent/repo/%i mcp-acme-coding-agent/repo/%i/input mcp-acme-coding-agent/repo/%i/output\n" in repo
    assert "BindReadOnlyPaths=%t/mcp-acme-coding-agent/repo/%i/input:/workspace/input\n" in repo
    assert "TemporaryFileSystem=/workspace/tmp:size=1073741824,mode=1777\n" in repo
    assert "BindPaths=/run/mcp-acme-coding-agent_egress/repo.sock:/run/mcpspec/egress.sock\n" in repo
    assert "PrivateNetwork=yes\n" in repo and "MemoryMax=2147483648\n" in repo and "CPUQuota=200%\n" in repo
    assert "RuntimeMaxSec=14400\n" in repo and "TasksMax=256\n" in repo
    socket = first.files[f"{STEM}_repo.socket"]
    assert "ListenStream=/run/mcp-acme-coding-agent/repo.sock\nSocketMode=0600\n" in socket and "Accept=yes\n" in socket
    conf = first.files["repo.squid.conf"]
    port = int(re.search(r"^http_port 127\.0\.0\.1:(\d+)$", conf, re.M).group(1))  # type: ignore[union-attr]
    assert 20000 <= port < 40000 and f"127.0.0.1:{port}" in first.files[f"{STEM}_repo_egress.service"]
    assert conf.index("logformat mcpspec") < conf.index("access_log stdio:")


def test_example_squid_configs_parse(tmp_path: Path) -> None:
    squid = require_tool("squid")
    for example in EXAMPLES:
        build = build_plan(api.load(example, example.name), "systemd")
        for name, text in build.files.items():
            if not name.endswith(".squid.conf"):
                continue
            conf = tmp_path / f"{example.stem}-{name}"
            # The unit's ExecStartPre=+ writes the host's addresses to its runtime directory; here, to a file of the test's.
            addresses = tmp_path / f"{example.stem}-{name}.host-addresses"
            addresses.write_text("0.0.0.0/32\n127.0.0.0/8\n::/127\n", encoding="utf-8")
            written, count = re.subn(r'^acl host_addresses dst "/run/[^"]+"$', f'acl host_addresses dst "{addresses}"', text, flags=re.M)
            assert count == 1, f"{example.stem}/{name}: no ACL of the host's own addresses"
            conf.write_text(written)
            result = subprocess.run([squid, "-k", "parse", "-f", str(conf)], capture_output=True, text=True, timeout=60, check=False)
            bad = [line for line in (result.stdout + result.stderr).splitlines() if re.search(r"FATAL|ERROR|Bungled|unrecognized|Unknown", line, re.I)]
            assert result.returncode == 0 and not bad, f"{example.stem}/{name}: {bad or result.stderr[-2000:]}"


# --- a spec whose commands exist here: verify must print nothing at all ---


def test_runnable_spec_verifies_without_a_word(tmp_path: Path, unit_dir: Path) -> None:
    plan, build = _build(RUNNABLE, tmp_path)
    assert not {"TG001", "TG004"} & _codes(build), [r.message for r in build.active]
    scores = _check_units(build, plan, unit_dir, allow_missing_commands=False)
    assert set(scores) >= {f"mcp-sd-probe_{name}@test.service" for name in plan.servers}
    for unit in ("mcp-sd-probe_quiet@test.service", "mcp-sd-probe_proxied@test.service"):
        assert scores[unit] <= 1.0
    quiet = build.files["mcp-sd-probe_quiet@.service"]
    assert "RestrictAddressFamilies=none\n" in quiet and "SocketBindDeny=any\n" in quiet and "User=m"in quiet and "-%i\n" in quiet
    assert "LoadCredential=token:/etc/sd-probe/token\n" in quiet and "LoadCredential=cred:sd-probe.cred\n" in quiet
    assert "BindReadOnlyPaths=%d/token:/run/secrets/token\n" in quiet
    assert "InaccessiblePaths=-/usr/bin/wget\n" in quiet and "-/usr/bin/curl " in quiet
    assert '"/var/log/mcp/sd-probe/audit.jsonl"' in quiet and "ExecStopPost=+/usr/bin/env -i /usr/bin/python3 -I -S -c " in quiet
    assert "TemporaryFileSystem=/run:" in quiet
    proxied = build.files["mcp-sd-probe_proxied@.service"]
    assert "ExecStart=/bin/bash --noprofile --norc -c " in proxied and "mcpspec-shim egress -- \"/usr/bin/python3\"" in proxied
    assert "/usr/bin/bash" not in proxied and "-/usr/bin/sh " in proxied  # bash runs the shim, sh is masked
    direct = build.files["mcp-sd-probe_direct@.service"]
    assert "PrivateNetwork=no\n" in direct and "IPAddressDeny=any\nIPAddressAllow=10.40.12.0/28 192.0.2.7/32\n" in direct
    web = build.files["mcp-sd-probe_web@.service"]
    assert "PrivateNetwork=yes\n" in web and "IPAddressAllow=localhost\n" in web and "SocketBindAllow=tcp:8931\nSocketBindAllow=ipv4:tcp:3128\n" in web
    assert "mcp-sd-probe_web.socket" not in build.files and "Wants=mcp-sd-probe_web_http@%i.socket\n" in web
    assert "mcp-sd-probe_web_squid.service" in build.files and "mcp-sd-probe_web_egress.socket" in build.files and "mcpspec-shim egress -- " in web
    assert "ListenStream=127.0.0.1:8931\n" in build.files["mcp-sd-probe_web_http@.socket"]
    forwarder = build.files["mcp-sd-probe_web_http@.service"]
    assert "JoinsNamespaceOf=mcp-sd-probe_web@%i.service\n" in forwarder and "PrivateNetwork=yes\n" in forwarder
    assert "ExecStart=/usr/lib/systemd/systemd-socket-proxyd 127.0.0.1:8931\n" in forwarder and ":22E3 " in forwarder
    closed = build.files["mcp-sd-probe_web-closed@.service"]
    assert "RestrictAddressFamilies=AF_INET AF_INET6\n" in closed and "SocketBindAllow=tcp:8932\n" in closed
    assert "ExecStopPost" not in build.files["mcp-sd-probe_web-closed@.service"]


# --- escaping: what systemd itself reads back ---


def _systemd_binary() -> str:
    for candidate in ("/usr/lib/systemd/systemd", "/lib/systemd/systemd"):
        if os.access(candidate, os.X_OK):
            return candidate
    return require_tool("/usr/lib/systemd/systemd")


def _dump_unit(directory: Path, unit: str) -> list[str]:
    """The lines `systemd --test` prints for one unit: its configuration after systemd parsed it."""
    command = [_systemd_binary(), "--test", "--system", f"--unit={unit}", "--no-pager", "--log-target=null"]
    if os.geteuid() == 0:  # systemd refuses test mode as root
        command = [require_tool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    environment = {**os.environ, "SYSTEMD_UNIT_PATH": f"{directory}:"}  # the trailing ':' keeps the default path
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, check=False)
    lines = result.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"-> Unit {unit}:"), None)
    assert start is not None, f"systemd --test did not dump {unit}:\n{result.stderr[-2000:]}"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("-> Unit ")), len(lines))
    return [line.strip() for line in lines[start + 1:end]]


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _split_dumped_command(text: str) -> list[str]:
    """Words of a dumped 'Command Line:' (systemd quotes them like a shell, with C escapes)."""
    words: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        word: list[str] = []
        if text[i] == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\":
                    following = text[i + 1]
                    if following in _ESCAPES:
                        word.append(_ESCAPES[following])
                    elif following == "x":
                        word.append(chr(int(text[i + 2:i + 4], 16)))
                        i += 2
                    else:
                        word.append(following)
                    i += 2
                else:
                    word.append(text[i])
                    i += 1
            i += 1
        else:
            while i < len(text) and text[i] != " ":
                assert text[i] not in "\\\"'", text
                word.append(text[i])
                i += 1
        words.append("".join(word))
    return words


def _at_run_time(word: str) -> str:
    """What exec sees: systemd turns '$$' into '$' (a lone '$' would start a variable)."""
    assert re.fullmatch(r"(?:[^$]|\$\$)*", word), f"unescaped $ in {word!r}"
    return word.replace("$$", "$")


def test_escaping_round_trips_through_systemd(tmp_path: Path, unit_dir: Path) -> None:
    plan, build = _build(TRICKY, tmp_path)
    assert list(plan.servers["tricky"].command) == TRICKY_COMMAND and dict(plan.servers["tricky"].env.set or {}) == TRICKY_ENV
    assert not {"TG001", "TG004"} & _codes(build)
    _check_units(build, plan, unit_dir, allow_missing_commands=False)
    dumped = _dump_unit(unit_dir, "mcp-esc-test_tricky@test.service")
    environment = dict(line.removeprefix("Environment: ").split("=", 1) for line in dumped if line.startswith("Environment: "))
    assert environment == TRICKY_ENV
    start = dumped.index("-> ExecStart:")
    command_line = dumped[start + 1].removeprefix("Command Line: ")
    assert [_at_run_time(word) for word in _split_dumped_command(command_line)] == TRICKY_COMMAND
    assert "Description: MCP server tricky: Percent 100% and a $VAR (run test)" in dumped
    stop = dumped.index("-> ExecStopPost:")
    audit = _split_dumped_command(dumped[stop + 1].removeprefix("Command Line: "))
    assert audit[:6] == ["/usr/bin/env", "-i", "/usr/bin/python3", "-I", "-S", "-c"] and audit[8:11] == ["esc-test", "tricky", "test"]
    assert audit[11:14] == ["${SERVICE_RESULT}", "${EXIT_CODE}", "${EXIT_STATUS}"]  # filled in by systemd at stop
    # Run the audit command as systemd would at stop, with those variables filled in.
    stopped = {"${SERVICE_RESULT}": "exit-code", "${EXIT_CODE}": "exited", "${EXIT_STATUS}": "3"}
    argv = [stopped[word] if word in stopped else _at_run_time(word) for word in audit]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    line = json.loads(result.stderr.splitlines()[-1])  # no journald here: the line goes to stderr, after a notice
    assert (result.returncode, line["event"], line["server"], line["instance"]) == (0, "stop", "tricky", "test")
    assert (line["result"], line["exit_code"], line["exit_status"]) == ("exit-code", "exited", "3")
    assert line["egress"]["mode"] == "none" and line["mounts"] == []


def test_a_mount_path_with_a_space_is_refused_and_nothing_is_built(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: spaces
servers:
  files:
    command: [/usr/bin/python3]
    mounts:
      - {from: "/srv/my data", to: /data}
""", tmp_path)
    refused = [r for r in build.active if r.code == "TG004"]
    assert refused and "/srv/my data" in refused[0].message and refused[0].path == ("servers", "files", "mounts", 0, "from")
    assert sorted(build.files) == [MANIFEST]


def test_an_unusable_command_is_refused(tmp_path: Path) -> None:
    for command in ('"exec server --flag"', "[-server]", "[bin/server]"):
        _, build = _build(f"version: 1\nproject: cmd\nservers:\n  one:\n    command: {command}\n", tmp_path)
        assert "TG004" in _codes(build), command
        assert sorted(build.files) == [MANIFEST], command


# --- gaps ---


def test_vault_secret_is_tg001(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: gaps
secrets:
  db: {provider: vault, ref: "database/creds/ro"}
servers:
  one:
    command: [/usr/bin/python3]
    secrets: [{use: db, as: {file: /run/secrets/db}}]
""", tmp_path)
    blocking = [r for r in build.active if r.code == "TG001"]
    assert [r.path for r in blocking] == [("secrets", "db", "provider")]
    assert "LoadCredential" not in build.files["mcp-gaps_one@.service"]


def test_env_form_secret_is_exported_by_the_shim_without_its_value(tmp_path: Path, unit_dir: Path) -> None:
    plan, build = _build("""\
version: 1
project: gaps
secrets:
  token: {provider: file, ref: /etc/gaps/token}
servers:
  one:
    command: [/usr/bin/python3]
    secrets: [{use: token, as: {env: GITHUB_TOKEN}}]
""", tmp_path)
    assert not {"TG001", "TG004"} & _codes(build), [r.message for r in build.active]
    unit = build.files["mcp-gaps_one@.service"]
    assert "LoadCredential=token:/etc/gaps/token\n" in unit and "BindReadOnlyPaths=%d/" not in unit
    assert 'mcpspec-shim GITHUB_TOKEN=token -- "/usr/bin/python3"' in unit
    _check_units(build, plan, unit_dir, allow_missing_commands=False)


def test_a_secret_source_a_server_can_write_is_tg001(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: gaps
secrets:
  token: {provider: file, ref: /srv/shared/keys/token}
  own: {provider: file, ref: /run/mcp-gaps/one/x/token}
servers:
  one:
    command: [/usr/bin/python3]
    secrets: [{use: token, as: {file: /run/secrets/token}}, {use: own, as: {env: OWN}}]
  two:
    command: [/usr/bin/python3]
    mounts: [{from: /srv/shared, to: /shared, mode: rw}]
""", tmp_path)
    blocking = [r for r in build.active if r.code == "TG001"]
    assert [r.path for r in blocking] == [("secrets", "token", "ref"), ("secrets", "own", "ref")]
    assert "server two can write" in blocking[0].message and "runtime directories" in blocking[1].message


def test_a_secret_inside_a_writable_workspace_dir_is_tg001(tmp_path: Path) -> None:
    """The run directories of a writable workspace dir are host directories a sandbox writes too."""
    _, build = _build("""\
version: 1
project: gaps
workspace:
  root: /srv/ws
  dirs: {output: {mode: rw}}
agents:
  coder: {servers: [one, two]}
secrets:
  token: {provider: file, ref: /srv/ws/coder/r1/output/token}
servers:
  one:
    command: [/usr/bin/python3]
    secrets: [{use: token, as: {file: /run/secrets/token}}]
  two:
    command: [/usr/bin/python3]
    mounts: [{from: workspace.output, to: /out}]
""", tmp_path)
    blocking = [r for r in build.active if r.code == "TG001" and r.path == ("secrets", "token", "ref")]
    assert blocking and "server two can write" in blocking[0].message


def test_two_projects_and_look_alike_names_never_share_a_unit(tmp_path: Path) -> None:
    spec = "version: 1\nproject: {project}\nservers:\n  {server}:\n    command: [/usr/bin/python3]\n    egress: {{allow: [\"pypi.mirror.acme.example:443\"]}}\n"
    seen: dict[str, str] = {}
    for project, server in (("a", "b-c"), ("a-b", "c"), ("a-b", "c-egress"), ("a-b", "c-squid")):
        _, build = _build(spec.format(project=project, server=server), tmp_path)
        users = set(re.findall(r"^User=(.*)$", "".join(t for n, t in build.files.items() if n.endswith("@.service")), re.M))
        for name in [n for n in build.files if n.endswith((".service", ".socket"))] + sorted(users):
            assert name not in seen, f"{project}/{server} and {seen[name]} both have {name}"
            seen[name] = f"{project}/{server}"


def test_a_spec_file_name_that_would_end_a_comment_stays_inside_it(tmp_path: Path) -> None:
    _, build = _build("version: 1\nproject: odd\nservers:\n  one:\n    command: [/usr/bin/python3]\n", tmp_path,
                      name="x\ntouch PWNED\nExecStartPre=+true\n#.yaml")
    assert not [r for r in build.active if r.code == "TG004"]
    units = {name: text for name, text in build.files.items() if name != MANIFEST}
    assert units
    for text in units.values():
        for line in text.splitlines():
            assert "PWNED" not in line or line.startswith("#"), line
            assert line != "ExecStartPre=+true"


def test_loader_variables_never_reach_the_root_audit_command(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: gaps
servers:
  one:
    command: [/usr/bin/python3]
    env: {set: {LD_PRELOAD: /workspace/out/evil.so}}
    logging: {audit: true}
""", tmp_path)
    refused = [r for r in build.active if r.code == "TG004"]
    assert refused and "LD_PRELOAD" in refused[0].message and sorted(build.files) == [MANIFEST]


def test_instance_users_fit_a_user_name(tmp_path: Path) -> None:
    """systemd refuses a DynamicUser= name that is not a valid user name (31 characters):
    a socket instance (connection, client pid, client uid) and a run id must fit."""
    for example in EXAMPLES:
        build = build_plan(api.load(example, example.name), "systemd")
        for name, text in build.files.items():
            for user in re.findall(r"^User=(.*)$", text, re.M):
                for instance in ("99999-4194304-65534", "a" * run_id_room()):
                    assert re.fullmatch(r"[a-z_][a-zA-Z0-9_-]{0,30}", user.replace("%i", instance)), (name, user)
    assert str(run_id_room()) in USAGE


def test_home_paths_and_open_binds_are_tg001(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: gaps
servers:
  web:
    transport: {type: http, bind: 0.0.0.0, port: 8080}
    command: [/usr/bin/python3]
    mounts: [{from: ~/.config, to: /config}]
""", tmp_path)
    paths = {r.path for r in build.active if r.code == "TG001"}
    assert ("servers", "web", "transport", "bind") in paths and ("servers", "web", "mounts", 0, "from") in paths


def test_an_http_server_gets_its_own_network_and_external_servers_get_nothing(tmp_path: Path) -> None:
    """Red team (issue 25, item 10): an HTTP server shared the host's network namespace (its abstract
    unix sockets and its loopback); now only direct egress does, and is told so."""
    _, build = _build("""\
version: 1
project: mixed
servers:
  web:
    transport: {type: http, port: 8080}
    command: [/usr/bin/python3]
  open:
    transport: {type: http, port: 8081}
    command: [/usr/bin/python3]
    egress: {allow: ["10.0.0.0/8"], via: direct}
  remote:
    placement: external
    transport: {type: http, url: "https://mcp.example.com/mcp"}
""", tmp_path)
    controls = json.loads(build.files[MANIFEST])["servers"]
    assert controls["web"]["controls"]["egress-deny"] == "full" and controls["web"]["controls"]["listeners"] == "full"
    assert not any(r.code == "TG002" and "(server web)" in r.message and ("network" in r.message or "loopback" in r.message) for r in build.active)
    assert controls["open"]["controls"]["egress-deny"] == "partial"
    assert any(r.code == "TG002" and "abstract unix socket" in r.message and "(server open)" in r.message for r in build.active)
    assert "PrivateNetwork=no\n" in build.files["mcp-mixed_open@.service"] and "mcp-mixed_open_http@.socket" not in build.files
    assert not any("remote" in name for name in build.files)


def test_an_http_server_behind_the_proxy_reaches_only_its_own_squid(tmp_path: Path) -> None:
    """Red team: an HTTP server shared the host's loopback, where every squid listens, so it could use
    another server's proxy. It now has its own network namespace and the stdio servers' egress socket;
    on port 3128, where the bridge listens inside, it is refused."""
    spec = """\
version: 1
project: web
servers:
  web:
    transport: {type: http, port: 8080}
    command: [/usr/bin/python3]
    egress: {allow: ["docs.example.org:443"]}
"""
    _, build = _build(spec, tmp_path)
    manifest = json.loads(build.files[MANIFEST])
    assert manifest["servers"]["web"]["controls"]["egress-allowlist"] == "full"
    assert manifest["servers"]["web"]["controls"]["egress-deny"] == "full"
    assert "BindPaths=/run/mcp-web_egress/web.sock:/run/mcpspec/egress.sock\n" in build.files["mcp-web_web@.service"]
    assert "HTTP_PROXY=http://127.0.0.1:3128" in build.files["mcp-web_web@.service"]
    _, clash = _build(spec.replace("port: 8080", "port: 3128"), tmp_path, "clash.yaml")
    assert any(r.code == "TG004" and "port 3128" in r.message for r in clash.active) and "mcp-web_web@.service" not in clash.files


def test_an_allowed_range_holding_a_metadata_address_is_tg001_without_the_proxy(tmp_path: Path) -> None:
    _, build = _build("""\
version: 1
project: gaps
servers:
  one:
    command: [/usr/bin/python3]
    egress: {allow: ["169.254.0.0/16:80", "10.0.0.0/8"], via: direct}
  two:
    command: [/usr/bin/python3]
    egress: {allow: ["0.0.0.0/0:443"], via: direct}
""", tmp_path)
    blocking = [r for r in build.active if r.code == "TG001"]
    assert len(blocking) == 1 and "contains the metadata range" in blocking[0].message and "(server two)" in blocking[0].message
    # Inside a metadata range an allow entry is dropped: metadata stays refused, as by squid.
    assert "IPAddressAllow=10.0.0.0/8\n" in build.files["mcp-gaps_one@.service"]


def test_the_audit_helper_never_follows_a_link_on_the_sink_path(tmp_path: Path) -> None:
    """The helper the units run at stop, on this machine's file system: a link in place of the
    sink or of a directory above it is refused, and nothing is written where it points."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "logs").symlink_to(elsewhere)
    with pytest.raises(audit.Refused):
        audit.append(str(tmp_path / "logs" / "new" / "audit.jsonl"), "{}")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "audit.jsonl").symlink_to(elsewhere / "victim")
    with pytest.raises(audit.Refused):
        audit.append(str(tmp_path / "real" / "audit.jsonl"), "{}")
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(audit.Refused):
        audit.append("relative/audit.jsonl", "{}")
    if os.geteuid() == 0:  # a sink the helper creates is root's, as under systemd
        audit.append(str(tmp_path / "made" / "audit.jsonl"), '{"a":1}')
        assert (tmp_path / "made" / "audit.jsonl").read_text() == '{"a":1}\n'
        assert json.loads(audit.audit_line(["p", "s", "i\n\"", "r", "c", "0", "journal", "[]", "{}"], 0))["instance"] == "i__"


def test_the_audit_helper_sends_its_own_identifier_and_fields_to_the_journal(tmp_path: Path) -> None:
    """Red team (issue 25, item 11): the audit line went to stderr, under the unit's identifier, which the
    server's own output has too. It goes to journald's native socket with its own identifier; hostile
    words cannot add a field (a newline would start one)."""
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(str(tmp_path / "journal"))
    with journal:
        line = audit.audit_line(["p", "s", "run\nMESSAGE_ID=x", "success", "exited", "0", "journal", "[]", "{}"], 0)
        audit.emit(line, 6, {"PROJECT": "p", "SERVER": "s", "INSTANCE": "run\n_UID=0", "EVENT": "stop"}, sockets=(str(tmp_path / "missing"), str(tmp_path / "journal")))
        entry = journal.recv(65536).decode()
    fields = dict(row.split("=", 1) for row in entry.splitlines())
    assert len(fields) == len(entry.splitlines())  # every key once
    assert fields["SYSLOG_IDENTIFIER"] == "mcpspec-audit" and fields["MESSAGE_ID"] == audit.MESSAGE_ID and fields["PRIORITY"] == "6"
    assert json.loads(fields["MESSAGE"]) == json.loads(line) and fields["MCPSPEC_INSTANCE"] == "run__UID_0"
    assert not {"_UID"} & set(fields) and sorted(k for k in fields if k.startswith("MCPSPEC_")) == ["MCPSPEC_EVENT", "MCPSPEC_INSTANCE", "MCPSPEC_PROJECT", "MCPSPEC_SERVER"]
    assert TARGET.usage.count("_UID=0 SYSLOG_IDENTIFIER=mcpspec-audit") >= 3  # the documented query


def test_every_unit_filters_syscalls_by_the_project_policy_with_names_systemd_knows(tmp_path: Path) -> None:
    """Red team (issue 25, item 2): @system-service kept @aio (io_uring) and @keyring. Every unit now
    lists the policy's allow-list by name; each name is in the installed systemd's table (an unknown
    one would be dropped with a warning), and nothing the policy refuses is there."""
    analyze = require_tool("systemd-analyze")
    listed = subprocess.run([analyze, "syscall-filter", "@known"], capture_output=True, text=True, timeout=60, check=True).stdout
    known = {line.strip() for line in listed.splitlines()[1:] if line.strip() and not line.strip().startswith(("#", "@"))}
    _, build = _build(RUNNABLE, tmp_path)
    for name, text in build.files.items():
        if not name.endswith(".service"):
            continue
        filters = re.findall(r"^SystemCallFilter=(.*)$", text, flags=re.M)
        assert len(filters) == 2 and filters[1].startswith("~@privileged"), (name, filters)
        allowed = filters[0].split()
        assert not [n for n in allowed if n.startswith("@")], name  # names only: no group brings io_uring back
        assert not {"io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "userfaultfd", "ptrace", "bpf"} & set(allowed), name
        assert set(allowed) <= known, (name, sorted(set(allowed) - known))
        assert "clone3" in allowed and "RestrictNamespaces=yes\n" in text  # ENOSYS through RestrictNamespaces=
        assert "SystemCallErrorNumber=EPERM\n" in text and "SystemCallArchitectures=native\n" in text and "LockPersonality=yes\n" in text and "KeyringMode=private\n" in text
    families = {name: re.search(r"^RestrictAddressFamilies=(.*)$", text, flags=re.M).group(1) for name, text in build.files.items() if name.endswith("@.service")}  # type: ignore[union-attr]
    assert families["mcp-sd-probe_quiet@.service"] == "none" and families["mcp-sd-probe_web-closed@.service"] == "AF_INET AF_INET6"
    assert families["mcp-sd-probe_proxied@.service"] == "AF_UNIX AF_INET AF_INET6"


def test_an_audit_sink_under_the_servers_own_mounts_is_not_an_audit_log(tmp_path: Path) -> None:
    """The root audit command (ExecStopPost=+) runs with the unit's BindPaths= and TemporaryFileSystem=
    applied (systemd 252, seen in a container): a sink under a mount target would be written into the
    server's own mount, or into the instance's tmpfs (/run, /dev/shm) and vanish."""
    _, build = _build("""\
version: 1
project: sinks
workspace:
  root: /srv/sinks
  dirs:
    out: {mode: rw}
servers:
  bound:
    command: [/usr/bin/python3]
    mounts: [{from: /srv/data, to: /var/log/mcp, mode: rw}]
    logging: {audit: true, sink: /var/log/mcp/audit.jsonl}
  work:
    command: [/usr/bin/python3]
    mounts: [{from: workspace.out, to: /var/log/work}]
    logging: {audit: true, sink: /var/log/work/audit.jsonl}
  run:
    command: [/usr/bin/python3]
    logging: {audit: true, sink: /run/mcp/audit.jsonl}
  fine:
    command: [/usr/bin/python3]
    mounts: [{from: /srv/data2, to: /var/log/other}]
    logging: {audit: true, sink: /var/log/mcp-fine/audit.jsonl}
""", tmp_path)
    found = {r.message.rsplit("(server ", 1)[1].rstrip(")") for r in build.active if r.code == "TG003" and "which the server's own unit mounts" in r.message}
    assert found == {"bound", "work", "run"}, [r.message for r in build.active]
    controls = {name: server["controls"]["audit-log"] for name, server in json.loads(build.files[MANIFEST])["servers"].items()}
    assert controls == {"bound": "none", "work": "none", "run": "none", "fine": "partial"}


def test_an_ipv6_http_server_is_forwarded_to_its_ipv6_loopback_and_no_policy_lets_io_uring_in(tmp_path: Path, unit_dir: Path) -> None:
    plan, build = _build("""\
version: 1
project: six
servers:
  web:
    transport: {type: http, port: 8080, bind: "::1"}
    command: [/usr/bin/python3, -m, http.server, --bind, "::1", "8080"]
""", tmp_path)
    forwarder = build.files["mcp-six_web_http@.service"]
    assert "ExecStart=/usr/lib/systemd/systemd-socket-proxyd [::1]:8080\n" in forwarder and "/proc/self/net/tcp6" in forwarder
    _check_units(build, plan, unit_dir, allow_missing_commands=False)
    # The unit writer refuses io_uring whatever a policy says (a group or a later policy change cannot bring it back).
    policy = syscall_policy(plan.servers["web"])
    widened = dataclasses.replace(policy, allowed=(*policy.allowed, "io_uring_setup"))
    with pytest.raises(ValueError, match="io_uring_setup"):
        system_call_filter(widened, "@privileged")
