"""Red-team regressions for the codex-profile and cedar targets: each attack that got through once.

Cedar: evaluated with cedarpy as each gateway asks; `mcpspec run`'s gate is the verdict no policy may exceed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from cedar_eval import RANK, docker, oracle, toolhive
from conftest import require_tool
from mcpspec.api import load_text
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.build import build_plan
from mcpspec.targets.cedar.docker import POLICY_FILE
from mcpspec.targets.codex_profile import CAPABILITIES as CODEX


def _two_rules(refused: str, allowed: str) -> str:
    return f"""\
version: 1
project: acme
servers:
  git:
    command: [/usr/bin/git-mcp]
    tools:
      push:
        when:
          - {{if: {{arg: cmd, equals: {refused!r}}}, then: refuse}}
          - {{if: {{arg: cmd, equals: {allowed!r}}}, then: allow}}
        otherwise: refuse
"""


def _verdicts(spec: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
    plan = load_text(spec, "mcp-sandbox.yaml")
    files = skeleton.build(get_target("cedar"), plan).files
    return (oracle(plan, plan.servers["git"], "push", arguments), docker(files[POLICY_FILE], "git", "push", arguments),
            toolhive(files["toolhive/git.authz.json"], "git", "push", arguments))


@pytest.mark.parametrize(("refused", "allowed"), [
    ("rm", "/bin/rm"),  # `mcpspec run` reads /bin/rm as rm
    ("main", " main"),  # stripped
    ("main", "'main'"),  # a shell's quote removal
    ("main", "m\u0430in"),  # a Cyrillic look-alike
    ("a b", "a  b"),  # blanks collapse
])
def test_a_later_allowed_string_that_may_read_as_a_refused_one_is_not_allowed(refused: str, allowed: str) -> None:
    """A string another rule names is not `surely not` the refused one when `mcpspec run` may read it as that."""
    run, by_docker, by_toolhive = _verdicts(_two_rules(refused, allowed), {"cmd": allowed})
    assert run == "refuse"
    assert RANK[by_docker] <= RANK[run] and RANK[by_toolhive] <= RANK[run], (by_docker, by_toolhive)


def test_an_allowed_string_with_nul_is_never_allowed() -> None:
    """`mcpspec run` never judges a string with NUL (a C server ends it there): no allow rule holds on it."""
    spec = _two_rules("ab", "never").replace("'ab'", '"a\\0b"').replace("then: refuse}", "then: allow}", 1)
    run, by_docker, by_toolhive = _verdicts(spec, {"cmd": "a\x00b"})
    assert run == "refuse"
    assert (by_docker, by_toolhive) == ("refuse", "refuse")


# A sysctl whose own value is written back: the write changes nothing, yet only a writer of host kernel state can make it.
SYSCTL = "/proc/sys/kernel/printk_ratelimit"


def test_a_server_started_by_root_writes_host_sysctls_so_no_boundary_row_is_full() -> None:
    """Codex's bubblewrap leaves /proc/sys as procfs gives it (bwrap covers only what the caller could write): a server
    of a Codex run as root is kernel root to every sysctl (kernel.core_pattern: a command the host runs outside every
    namespace). No profile entry covers it (a `read` or `none` entry is mounted under the new /proc)."""
    codex = require_tool("codex")
    if os.geteuid() != 0:
        pytest.skip("the attack needs Codex started as root")
    base = Path(tempfile.mkdtemp(prefix="mcpspec-codex-rt-", dir="/tmp"))
    (base / "tmpdir").mkdir()
    (base / "home" / ".codex").mkdir(parents=True)
    script = f'v=$(cat {SYSCTL}) && echo "$v" > {SYSCTL} && echo wrote; test -w /proc/sys/kernel/core_pattern && echo core'
    spec = f"version: 1\nproject: rt\nservers:\n  rt:\n    command: [/bin/sh, -c, {script!r}]\n"
    config = tomllib.loads(build_plan(load_text(spec, "mcp-sandbox.yaml"), "codex-profile").files["codex-config.toml"])
    config["permissions"]["mcpspec-rt"]["filesystem"][str(Path(codex).resolve().parents[2])] = "read"  # Codex outside /usr: the README's step
    (base / "home" / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    env = {"HOME": str(base / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(base / "tmpdir")}
    try:
        done = subprocess.run([codex, *config["mcp_servers"]["rt"]["args"]], env=env, cwd=base, capture_output=True, text=True, timeout=60, check=False)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if "wrote" not in done.stdout:
        assert done.returncode != 0 or "Permission denied" in done.stderr or "Read-only" in done.stderr, done.stderr[-2000:]
        return
    for control in ("mounts", "egress-deny", "metadata-blocking", "listeners"):
        capability = CODEX[control]
        assert capability.level != "full" and "/proc/sys" in capability.how, (control, capability.level)


def test_env_set_with_inherit_all_reaches_the_server_not_the_launcher_outside_the_sandbox() -> None:
    """With env.inherit all, env.set was the entry's `env`: Codex sets it on `codex sandbox` itself, outside the sandbox.
    NODE_OPTIONS there loads a file the server wrote into its rw mount on the host, unsandboxed (PATH, CODEX_HOME, HOME
    and LD_PRELOAD the same). The spec's variables are the server's: they must reach it inside the sandbox only."""
    codex = require_tool("codex")
    base = Path(tempfile.mkdtemp(prefix="mcpspec-codex-rt-", dir="/tmp"))
    try:
        work, escaped = base / "work", base / "escaped"
        work.mkdir()
        (base / "tmpdir").mkdir()
        (base / "home" / ".codex").mkdir(parents=True)
        # What a server may write into its own rw mount, to be loaded at its next start.
        (work / "evil.js").write_text(f"require('fs').writeFileSync({str(escaped)!r}, 'outside');\n", encoding="utf-8")
        spec = (f"version: 1\nproject: rt\nservers:\n  rt:\n    command: [/bin/sh, -c, 'echo \"$NODE_OPTIONS\"']\n"
                f"    env:\n      inherit: all\n      set: {{NODE_OPTIONS: '--require={work}/evil.js'}}\n"
                f"    mounts:\n      - {{from: {work}, to: {work}, mode: rw}}\n")
        config = tomllib.loads(build_plan(load_text(spec, "mcp-sandbox.yaml"), "codex-profile").files["codex-config.toml"])
        config["permissions"]["mcpspec-rt"]["filesystem"][str(Path(codex).resolve().parents[2])] = "read"
        (base / "home" / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
        entry = config["mcp_servers"]["rt"]
        # Codex starts the entry's command with its env on top of the environment it passes servers.
        env = {"HOME": str(base / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(base / "tmpdir"), **entry.get("env", {})}
        done = subprocess.run([codex, *entry["args"]], env=env, cwd=work, capture_output=True, text=True, timeout=60, check=False)
        assert not escaped.exists(), "env.set ran code outside the sandbox, in Codex's own launcher"
        assert done.stdout.strip() == f"--require={work}/evil.js", (done.stdout, done.stderr[-2000:])  # the server still gets it
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_descriptor_left_open_by_codexs_parent_reaches_the_server_so_no_boundary_row_is_full() -> None:
    """Codex closes only its low descriptors before the sandbox: a directory its parent left open at 300 (not
    close-on-exec) is the server's, and stays in /proc/1/fd (Codex's helper, pid 1 in the sandbox) were the server
    to close its own. A file under it, outside every mount, is read."""
    codex = require_tool("codex")
    base = Path(tempfile.mkdtemp(prefix="mcpspec-codex-rt-", dir="/tmp"))
    try:
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret").write_text("outside-secret", encoding="utf-8")
        (base / "tmpdir").mkdir()
        (base / "home" / ".codex").mkdir(parents=True)
        held = os.open(outside, os.O_RDONLY | os.O_DIRECTORY)
        number = fcntl.fcntl(held, fcntl.F_DUPFD, 300)  # the lowest free descriptor from 300: past those Codex closes
        os.close(held)
        os.set_inheritable(number, True)
        spec = f"version: 1\nproject: rt\nservers:\n  rt:\n    command: [/bin/sh, -c, 'cat /proc/1/fd/{number}/secret']\n"
        config = tomllib.loads(build_plan(load_text(spec, "mcp-sandbox.yaml"), "codex-profile").files["codex-config.toml"])
        config["permissions"]["mcpspec-rt"]["filesystem"][str(Path(codex).resolve().parents[2])] = "read"
        (base / "home" / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
        env = {"HOME": str(base / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(base / "tmpdir")}
        try:
            done = subprocess.run([codex, *config["mcp_servers"]["rt"]["args"]], env=env, cwd=base, pass_fds=(number,),
                                  capture_output=True, text=True, timeout=60, check=False)
        finally:
            os.close(number)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if "outside-secret" not in done.stdout:
        return
    for control in ("mounts", "hidden-paths", "egress-deny", "metadata-blocking", "listeners"):
        capability = CODEX[control]
        assert capability.level != "full" and "descriptor" in capability.how, (control, capability.level)
