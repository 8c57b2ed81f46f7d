"""Issue 26 item 11: every bwrap and systemd build comes with a systemd-tmpfiles.d file that makes
exactly the directories the launcher checks, the launcher names every missing prerequisite at once
(and that file), and verify does the same for every server before it runs any.

The tmpfiles file is applied for real (`systemd-tmpfiles --create --root=DIR`), then the launcher's
own check (runtime.host_problems) runs against DIR: the file and the check cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require_tool
from mcpspec.api import build_file
from mcpspec.targets.bwrap import runtime
from mcpspec.targets.hostprep import tmpfiles_path
from mcpspec.verify.launcher import read_config

EXAMPLES = REPO / "examples"
LINE = re.compile(r"d (\S+) :(0[0-7]{3}) :root :root - -")


def _root_only() -> None:
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("systemd-tmpfiles makes root-owned directories: this test needs root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("systemd-tmpfiles makes root-owned directories: this test needs root")


def _files(spec: Path, target: str) -> dict[str, str]:
    outcome = build_file(spec, target)
    assert outcome.build is not None and not outcome.stopped, outcome
    return dict(outcome.build.files)


def _tmpfiles(files: dict[str, str]) -> tuple[str, list[tuple[str, int]]]:
    [name] = [name for name in files if name.endswith(".tmpfiles.conf")]
    lines = [line for line in files[name].splitlines() if line and not line.startswith("#")]
    parsed = []
    for line in lines:
        match = LINE.fullmatch(line)
        assert match, f"not a create-only root directory line: {line!r}"
        parsed.append((match[1].replace("%%", "%"), int(match[2], 8)))
    return name, parsed


def _apply(conf: Path, top: Path) -> None:
    tool = require_tool("systemd-tmpfiles")
    top.mkdir(exist_ok=True)
    # systemd-tmpfiles reads a relative file name from its own directories: the path is absolute.
    done = subprocess.run([tool, "--create", f"--root={top}", str(conf.resolve())], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def _directory_problems(configs: list[dict[str, object]], top: Path) -> list[str]:
    found = []
    for config in configs:
        found += [p.text for p in runtime.host_problems(runtime.Config.load(config), runtime.TrustedPaths(str(top))) if p.directory]
    return found


@pytest.mark.parametrize("example", ["coding-agent", "package-analysis", "browser-agent"])
def test_the_tmpfiles_file_makes_exactly_what_the_launcher_checks(tmp_path: Path, example: str) -> None:
    """Applied under a fresh root, the file satisfies every directory check of every launcher; each
    of its lines is a directory a launcher checks (made group-writable, the check names it); and
    each is root's with the mode the launcher itself would make (0711 workspace root) or needs
    (0700 audit directory), nothing wider."""
    _root_only()
    files = _files(EXAMPLES / f"{example}.yaml", "bwrap")
    name, lines = _tmpfiles(files)
    configs = [read_config(text, path) for path, text in files.items() if path.endswith(".py")]
    conf = tmp_path / name
    conf.write_text(files[name], encoding="utf-8")
    top = tmp_path / "root"
    top.mkdir()
    before = _directory_problems(configs, top)
    sinks = {str(c["audit_sink"]) for c in configs if c["audit"] and str(c["audit_sink"]).startswith("/")}
    assert len(before) == sum(1 for c in configs if str(c["audit_sink"]) in sinks), before  # each file sink's directory is missing
    assert all("does not exist" in text for text in before), before

    _apply(conf, top)
    assert _directory_problems(configs, top) == []
    assert lines, "the build needs directories, and the file lists none"
    for path, mode in lines:
        made = os.lstat(top / path.lstrip("/"))
        assert stat.S_ISDIR(made.st_mode) and made.st_uid == 0 and made.st_gid == 0
        assert stat.S_IMODE(made.st_mode) == mode and mode in (0o700, 0o711), (path, oct(mode))
        expected = 0o711 if any(c["workspace_root"] == path for c in configs) else 0o700
        assert mode == expected, (path, oct(mode))
        os.chmod(top / path.lstrip("/"), mode | 0o020)  # another user could write to it: the launcher must say so
        named = [text for text in _directory_problems(configs, top) if path in text]
        os.chmod(top / path.lstrip("/"), mode)
        assert named, f"{path} is in the tmpfiles file but no launcher checks it"
    assert _directory_problems(configs, top) == []


def test_the_systemd_builds_file_makes_the_audit_directory_the_bwrap_launcher_also_accepts(tmp_path: Path) -> None:
    _root_only()
    spec = EXAMPLES / "coding-agent.yaml"
    bwrap, systemd = _files(spec, "bwrap"), _files(spec, "systemd")
    name, lines = _tmpfiles(systemd)
    assert lines == [("/var/log/mcp/acme-coding-agent", 0o700)]
    assert set(lines) <= set(_tmpfiles(bwrap)[1])
    conf = tmp_path / name
    conf.write_text(systemd[name], encoding="utf-8")
    _apply(conf, tmp_path / "root")
    configs = [read_config(text, path) for path, text in bwrap.items() if path.endswith(".py")]
    assert not [text for text in _directory_problems(configs, tmp_path / "root") if "audit" in text]


UNREADY = """version: 1
project: unready
workspace:
  root: {place}/ws
  dirs: {{out: {{mode: rw}}}}
agents:
  a: {{servers: [s]}}
secrets:
  token: {{provider: file, ref: {place}/no-such-secret}}
servers:
  s:
    command: [/usr/bin/true]
    egress: {{default: deny}}
    lifecycle: {{idle_timeout: 1m, max_lifetime: 1m}}
    logging: {{sink: {place}/logs/unready/audit.jsonl}}
    mounts:
      - {{from: workspace.out, to: /out}}
      - {{from: {place}/no-such-data, to: /data, mode: ro}}
    secrets:
      - {{use: token, as: {{env: TOKEN}}}}
    tools:
      t: {{effects: [reads_private, writes_local]}}
"""


def _unready(place: Path) -> tuple[Path, Path]:
    spec = place / "unready.yaml"
    spec.write_text(UNREADY.format(place=place), encoding="utf-8")
    (place / "ws").mkdir()
    (place / "ws").chmod(0o775)  # group-writable: root would make others' directories in it
    out = place / "build"
    built = subprocess.run([sys.executable, "-m", "mcpspec", "build", str(spec), "--target", "bwrap", "--out", str(out)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    return spec, out


def test_a_launcher_on_a_host_missing_several_prerequisites_names_them_all_at_once(tmp_path: Path) -> None:
    """The audit directory missing, a group-writable workspace root, a missing secret file and a
    missing mount source: one refusal (status 125) names all four and the command that applies the
    build's tmpfiles file (by its absolute path), and nothing was made for the run."""
    require_tool("bwrap")
    _spec, out = _unready(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "MCPSPEC_RUN_ID": "r1", "MCPSPEC_CGROUP": "off"}
    ran = subprocess.run([str(out / "s.py")], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert ran.returncode == 125, ran.stderr
    said = [line for line in ran.stderr.splitlines() if line.startswith("mcpspec s: ")]
    assert len(said) == 1, ran.stderr
    message = said[0]
    assert "(4 problems)" in message, message
    assert f"the directory {tmp_path}/logs/unready of {tmp_path}/logs/unready/audit.jsonl is missing ({tmp_path}/logs does not exist)" in message
    assert f"refusing {tmp_path}/ws: another user can write to it" in message
    assert f"secret token: cannot read {tmp_path}/no-such-secret" in message
    assert f"mount source {tmp_path}/no-such-data does not exist" in message
    assert f"systemd-tmpfiles --create {out.resolve()}/unready.tmpfiles.conf" in message
    assert list((tmp_path / "ws").iterdir()) == [], "the launcher made a run directory on a host it refused"


def test_verify_reports_every_missing_prerequisite_of_every_server_before_running_any(tmp_path: Path) -> None:
    require_tool("bwrap")
    spec, out = _unready(tmp_path)
    second = spec.read_text(encoding="utf-8").replace("servers: [s]}", "servers: [s, s2]}")
    second += "  s2:\n    command: [/usr/bin/true]\n    egress: {default: deny}\n    lifecycle: {idle_timeout: 1m, max_lifetime: 1m}\n"
    second += f"    logging: {{sink: {tmp_path}/logs/s2/audit.jsonl}}\n    tools:\n      t: {{effects: [reads_private]}}\n"
    spec.write_text(second, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "mcpspec", "build", str(spec), "--target", "bwrap", "--out", str(out)], capture_output=True, check=True, timeout=120)
    result = subprocess.run([sys.executable, "-m", "mcpspec", "verify", str(spec), "--build-dir", str(out), "--format", "json"],
                            capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "MCPSPEC_CGROUP": "off"})
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert {row["control"] for row in rows} == {"host: prerequisite"} and all(row["status"] == "fail" for row in rows)
    assert [row["server"] for row in rows] == ["s"] * 4 + ["s2"]
    assert f"{tmp_path}/logs/s2/audit.jsonl is missing" in rows[-1]["observed"]
    command = f"systemd-tmpfiles --create {out.resolve()}/unready.tmpfiles.conf"
    made = [row for row in rows if "audit.jsonl" in row["observed"] or f"{tmp_path}/ws" in row["observed"]]
    assert len(made) == 3 and all(command in row["expected"] for row in made), rows
    assert not any(command in row["expected"] for row in rows if row not in made), rows
    assert not (tmp_path / "logs").exists() and list((tmp_path / "ws").iterdir()) == [], "verify ran a launcher on a host it found unready"


@pytest.mark.parametrize("path", ["/srv/a b", '/srv/a"b', "/srv/a'b", "/srv/a\\b", "/srv/caf\u00e9", "/srv/a$b", "/srv/a\nb", "/srv/a\tb",
                                  "srv/a", "/", "/srv//a", "/srv/./a", "/srv/../a", "/srv/a/"])
def test_a_path_tmpfiles_cannot_carry_as_written_is_refused(path: str) -> None:
    with pytest.raises(ValueError):
        tmpfiles_path(path)


HOSTILE = """version: 1
project: hostile
agents:
  a: {{servers: [s]}}
servers:
  s:
    command: [/usr/bin/true]
    egress: {{default: deny}}
    lifecycle: {{idle_timeout: 1m, max_lifetime: 1m}}
    logging: {{sink: {sink}}}
    tools:
      t: {{effects: [reads_private]}}
"""


@pytest.mark.parametrize("sink", ['"/var/log/a b/audit.jsonl"', "'/var/log/a\"b/audit.jsonl'", '"/var/log/a\\\\b/audit.jsonl"',
                                  "/var/log/caf\u00e9/audit.jsonl", '"/var/log/a\\u2028b/audit.jsonl"', "/var/log/$(id)/audit.jsonl"])
@pytest.mark.parametrize("target", ["bwrap", "systemd"])
def test_a_hostile_sink_directory_is_left_out_of_the_tmpfiles_file(tmp_path: Path, sink: str, target: str) -> None:
    """A path tmpfiles.d cannot read as written is not in the file (a comment says what to make by
    hand), the build goes on, and systemd-tmpfiles applying the file makes nothing at all."""
    _root_only()
    spec = tmp_path / "hostile.yaml"
    spec.write_text(HOSTILE.format(sink=sink), encoding="utf-8")
    outcome = build_file(spec, target)
    if outcome.build is None or outcome.stopped:  # the target's own escaping refused the sink first (systemd: TG004)
        assert target == "systemd" and any(r.code == "TG004" for r in outcome.lint.results), outcome.lint.results
        return
    name, lines = _tmpfiles(dict(outcome.build.files))
    assert lines == []
    text = outcome.build.files[name]
    assert "# Left out (the audit sink of server s): /var/log/" in text and "a directory of root's, mode 0700" in text
    conf = tmp_path / name
    conf.write_text(text, encoding="utf-8")
    _apply(conf, tmp_path / "root")
    assert list((tmp_path / "root").iterdir()) == []


def test_a_percent_sign_reaches_the_directory_literally_not_as_a_specifier(tmp_path: Path) -> None:
    """%a is systemd's architecture specifier: written as %%a it names the directory '%a'."""
    _root_only()
    spec = tmp_path / "percent.yaml"
    spec.write_text(HOSTILE.format(sink="/var/log/%a%H/audit.jsonl"), encoding="utf-8")
    files = _files(spec, "bwrap")
    name, lines = _tmpfiles(files)
    assert lines == [("/var/log/%a%H", 0o700)]
    assert "d /var/log/%%a%%H :0700 :root :root - -" in files[name]
    conf = tmp_path / name
    conf.write_text(files[name], encoding="utf-8")
    _apply(conf, tmp_path / "root")
    assert sorted(os.listdir(tmp_path / "root" / "var" / "log")) == ["%a%H"]


OS_LINES = "d /run/lock 0755 root root -\nd /run/user 0755 root root -\nd /var/log 0755 root root -\n"


@pytest.mark.parametrize("sink", ["/run/lock/audit.jsonl", "/run/user/audit.jsonl", "/var/log/audit.jsonl", "/sys/fs/cgroup/mcpspec-evil/audit.jsonl"])
@pytest.mark.parametrize("target", ["bwrap", "systemd"])
def test_the_tmpfiles_file_installed_at_boot_never_takes_the_place_of_the_oss_own_lines(tmp_path: Path, sink: str, target: str) -> None:
    """Installed in /etc/tmpfiles.d as the header says, a line for a directory the OS's own
    tmpfiles.d file also names wins when its file name sorts first (acme before legacy): a sink in
    /run/lock made /run/lock root's 0700 at every boot, and one in /sys/fs/cgroup made a cgroup.
    The boot is run for real (systemd-tmpfiles --create --root, every config directory read)."""
    _root_only()
    spec = tmp_path / "acme.yaml"
    spec.write_text(HOSTILE.format(sink=sink).replace("project: hostile", "project: acme"), encoding="utf-8")
    outcome = build_file(spec, target)
    assert outcome.build is not None and not outcome.stopped, outcome.lint.results
    name, lines = _tmpfiles(dict(outcome.build.files))
    top = tmp_path / "root"
    (top / "usr/lib/tmpfiles.d").mkdir(parents=True)
    (top / "usr/lib/tmpfiles.d/legacy.conf").write_text(OS_LINES, encoding="utf-8")
    (top / "etc/tmpfiles.d").mkdir(parents=True)
    (top / "etc/tmpfiles.d" / name).write_text(outcome.build.files[name], encoding="utf-8")
    done = subprocess.run([require_tool("systemd-tmpfiles"), "--create", f"--root={top}"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for directory in ("run/lock", "run/user", "var/log"):
        assert stat.S_IMODE((top / directory).stat().st_mode) == 0o755, directory
    assert not (top / "sys").exists()
    assert name == "acme.tmpfiles.conf" and lines == []
