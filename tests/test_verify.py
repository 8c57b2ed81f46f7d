"""`mcpspec verify` with real bwrap, squid and the real probe.

Network: every run of verify happens inside a network namespace this test creates (egress_lab.py),
linked only to a second one of the test's. The spec's allowed names resolve (through the launcher's
hosts file) to 100.128.0.7, an address of that second namespace where a listener plays the allowed
destination (not the first namespace's own: the proxy refuses the host's own addresses); 127.0.0.2
stands in for a denied address; nothing can leave the two namespaces, so squid's name lookups go
nowhere either.

The examples are copied with three host locations moved into the test's directory (the workspace
root, the audit sink and the browser example's secret file): where the launcher keeps a run's
files and writes its audit line, not a control of the sandbox.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool
from egress_lab import FAR_V4, Lab, make_lab

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
BUILDABLE = ("browser-agent", "coding-agent", "package-analysis")
UNBUILDABLE = ("data-connector", "deploy-tool", "risky")
ALLOWED_ADDRESS = FAR_V4
CANARY = "canary-value-5e0d1b"
SECRET_VALUE = '{"cookies": "qa-shopper-test-only-8c1f"}'


class Namespace:
    """The lab of egress_lab.py: verify runs in its host namespace, the allowed destination
    (ALLOWED_ADDRESS:443, accepting and closing) is in the far one: the proxy refuses the
    host's own addresses, so the destination cannot be one of them."""

    def __init__(self) -> None:
        self.lab: Lab | None = None

    def __enter__(self) -> Namespace:
        self.lab = make_lab()
        self.ip, self.name = self.lab.ip, self.lab.host
        serve = f"import socket\ns = socket.create_server(('{ALLOWED_ADDRESS}', 443))\nwhile True:\n    c, _ = s.accept()\n    c.close()\n"
        self.lab.processes.append(subprocess.Popen([*self.lab.inside(self.lab.far), sys.executable, "-c", serve]))
        self.lab.wait_connect(ALLOWED_ADDRESS, 443)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lab is not None:
            self.lab.close()


@pytest.fixture(scope="module")
def netns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Namespace]:
    for tool in ("bwrap", "squid", "socat", "/usr/bin/python3"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("verify's test makes a network namespace, which needs root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("verify's test makes a network namespace, which needs root")
    with Namespace() as made:
        yield made


@pytest.fixture
def place(request: pytest.FixtureRequest) -> Iterator[Path]:
    # Not pytest's tmp_path: its parents are 0700, and bwrap resolves the workspace as the sandbox's uid.
    tmp_path = Path(tempfile.mkdtemp(prefix="mcpspec-verify-test-", dir="/tmp"))
    tmp_path.chmod(0o755)
    try:
        yield from _fill(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _fill(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("not a key", encoding="utf-8")
    home.chmod(0o755)  # readable by the sandbox's uid: only the mount namespace keeps it out
    secret = tmp_path / "storage-state.json"
    secret.write_text(SECRET_VALUE, encoding="utf-8")
    secret.chmod(0o600)
    hosts = tmp_path / "hosts"
    names = set()
    for example in BUILDABLE:
        names |= set(re.findall(r'"([a-z0-9.-]+\.[a-z]+):443"', (EXAMPLES / f"{example}.yaml").read_text(encoding="utf-8")))
    hosts.write_text("".join(f"{ALLOWED_ADDRESS} {name}\n" for name in sorted(names)), encoding="utf-8")
    hosts.chmod(0o644)
    yield tmp_path


def copy_example(name: str, place: Path) -> Path:
    text = (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")
    text = text.replace("root: /srv/mcp/workspaces", f"root: {place}/ws")
    text = re.sub(r"sink: (journal|/var/log/mcp/[a-z-]+/audit\.jsonl)", f"sink: {place}/audit.jsonl", text)
    text = text.replace("/etc/acme/qa/qa-shopper-1.storage-state.json", str(place / "storage-state.json"))
    spec = place / "spec" / f"{name}.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(text, encoding="utf-8")
    return spec


def verify(netns: Namespace, place: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(place / "home"), "MCPSPEC_EGRESS_HOSTS_FILE": str(place / "hosts"),
           "VERIFY_CANARY": CANARY}
    argv = [netns.ip, "netns", "exec", netns.name, sys.executable, "-m", "mcpspec", "verify", *args, "--deny-target", "127.0.0.2:9", "--format", "json"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=place)


def rows(result: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    assert "Traceback" not in result.stderr, result.stderr
    data = json.loads(result.stdout)
    return list(data["rows"])


@pytest.mark.parametrize("example", BUILDABLE)
def test_verify_passes_on_every_buildable_example(netns: Namespace, place: Path, example: str) -> None:
    spec = copy_example(example, place)
    result = verify(netns, place, str(spec), "--skip", "lifetime")
    found = rows(result)
    failing = [row for row in found if row["status"] == "fail"]
    assert result.returncode == 0 and not failing, failing or result.stderr
    controls = {row["control"]: row for row in found}
    home = str(place / "home")
    assert controls[f"hidden: {home}"]["observed"] == "absent"
    assert controls[f"hidden: {spec.parent}"]["observed"] == "absent"
    assert controls["hidden: /etc/shadow"]["observed"] == "absent"
    assert controls["identity: capabilities"]["status"] == "pass"
    allowed = [row for row in found if row["control"].startswith("egress allowed:")]
    assert allowed and all(row["observed"] == "200" for row in allowed)
    assert any(row["control"] == "egress via proxy: 127.0.0.2:9" and row["observed"].startswith("403") for row in found)
    assert {row["control"] for row in found} >= {"env: names", "limit: pids", "limit: memory", "mount ro: /"}
    assert {row["status"] for row in found if row["control"] == "lifetime"} == {"skipped"}
    if example == "browser-agent":
        secret = controls["secret: qa-shopper-session"]
        assert secret["expected"] == "only at file /run/secrets/storage-state.json" and secret["status"] == "pass"
        assert SECRET_VALUE not in result.stdout
    assert not list((place / "ws").glob("*/verify-*")), "verify left its run's workspace behind"


def test_an_edited_launcher_that_binds_home_passes_the_environment_and_leaks_a_secret_fails(netns: Namespace, place: Path) -> None:
    spec = copy_example("browser-agent", place)
    out = place / "build"
    subprocess.run([sys.executable, "-m", "mcpspec", "build", str(spec), "--target", "bwrap", "--out", str(out)], check=True, capture_output=True)
    launcher = out / "browser.py"
    text = launcher.read_text(encoding="utf-8")
    home = str(place / "home")
    edited = text.replace("'env_mode': 'none',", "'env_mode': 'all',", 1)
    edited = edited.replace("'mounts': [", f"'mounts': [{{'kind': 'host', 'mode': 'ro', 'source': {home!r}, 'target': {home!r}, 'size': 0}}, ", 1)
    edited = edited.replace("'env': None, 'file': '/run/secrets/storage-state.json'", "'env': 'LEAKED', 'file': '/run/secrets/storage-state.json'", 1)
    assert edited.count("'env_mode': 'all'") == 1 and home in edited and "LEAKED" in edited
    launcher.write_text(edited, encoding="utf-8")
    result = verify(netns, place, str(spec), "--build-dir", str(out))
    found = rows(result)
    assert result.returncode == 1
    failing = {row["control"]: row for row in found if row["status"] == "fail"}
    assert set(failing) == {f"hidden: {home}", "env: names", "secret: qa-shopper-session", "lifetime"}, failing
    assert failing[f"hidden: {home}"]["observed"].startswith("present")
    assert "VERIFY_CANARY" in failing["env: names"]["observed"]
    assert "env LEAKED" in failing["secret: qa-shopper-session"]["observed"]
    assert failing["lifetime"]["observed"] == "not checked: max_lifetime 1h is longer than --lifetime-check-limit 2m"
    assert CANARY not in result.stdout and SECRET_VALUE not in result.stdout


def test_max_lifetime_ends_the_probe(netns: Namespace, place: Path) -> None:
    spec = place / "short.yaml"
    spec.write_text(
        """version: 1
project: short
agents:
  a: {servers: [s]}
servers:
  s:
    command: [/usr/bin/true]
    egress: {default: deny}
    lifecycle: {max_lifetime: 2s}
    runtime: {pids: 16, memory: 256Mi}
    tools:
      t: {effects: [reads_private]}
""",
        encoding="utf-8",
    )
    result = verify(netns, place, str(spec))
    found = rows(result)
    assert result.returncode == 0, [row for row in found if row["status"] == "fail"] or result.stderr
    lifetime = next(row for row in found if row["control"] == "lifetime")
    assert lifetime["status"] == "pass" and lifetime["observed"].endswith("status 143")
    assert next(row for row in found if row["control"] == "egress: proxy")["observed"] == "none"


def test_a_probe_that_cannot_start_fails_the_launch_and_says_why(netns: Namespace, place: Path) -> None:
    spec = place / "hidden-python.yaml"
    spec.write_text(
        """version: 1
project: nopython
agents:
  a: {servers: [s]}
servers:
  s:
    command: [/usr/bin/true]
    egress: {default: deny}
    process: {deny: [python3]}
    tools:
      t: {effects: [reads_private]}
""",
        encoding="utf-8",
    )
    result = verify(netns, place, str(spec))
    found = rows(result)
    assert result.returncode == 1
    assert [row["control"] for row in found] == ["launch"] and found[0]["status"] == "fail"
    assert found[0]["observed"].startswith("no report (launcher status"), found[0]


@pytest.mark.parametrize("example", UNBUILDABLE)
def test_a_spec_that_does_not_build_exits_2_with_its_findings(example: str) -> None:
    result = subprocess.run([sys.executable, "-m", "mcpspec", "verify", str(EXAMPLES / f"{example}.yaml")], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert re.search(rf"{example}\.yaml:\d+:\d+: TG00", result.stderr), result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nproject: x\nservers:\n  s: {command: [a], bogus: 1}\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mcpspec", "verify", str(bad)], capture_output=True, text=True)
    assert result.returncode == 2 and re.search(r"bad\.yaml:4:\d+", result.stderr) and "Traceback" not in result.stderr
    for args in (["--deny-target", "nowhere"], ["--skip", "everything"], ["--target", "systemd"], ["--build-dir", str(tmp_path / "none")]):
        result = subprocess.run([sys.executable, "-m", "mcpspec", "verify", str(EXAMPLES / "coding-agent.yaml"), *args], capture_output=True, text=True)
        assert result.returncode == 2 and "Traceback" not in result.stderr, (args, result.stderr)


def test_the_rewrite_changes_only_the_command_and_adds_the_probe_mount(tmp_path: Path) -> None:
    from mcpspec.verify.launcher import PROBE_COMMAND, LauncherError, probe_mount, read_config, rewrite

    out = tmp_path / "build"
    subprocess.run([sys.executable, "-m", "mcpspec", "build", str(EXAMPLES / "coding-agent.yaml"), "--target", "bwrap", "--out", str(out)], check=True, capture_output=True)
    text = (out / "repo.py").read_text(encoding="utf-8")
    new = rewrite(text, "repo.py", "/tmp/p/probe.py")
    before, after = read_config(text, "a"), read_config(new, "b")
    assert after == {**before, "command": PROBE_COMMAND, "mounts": [*before["mounts"], probe_mount("/tmp/p/probe.py")]}
    head, tail = text.split("CONFIG = {", 1)[0], text.split("\n}\n", 1)[1]
    assert new.startswith(head) and new.endswith(tail)  # the runtime is untouched
    with pytest.raises(LauncherError):
        rewrite("print('not a launcher')\n", "x.py", "/p")
