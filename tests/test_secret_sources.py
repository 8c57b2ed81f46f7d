"""One spec for every target: a secret's source per target (secrets.NAME.sources) and images given once (images).

Each build must read only its own target's source: the artifacts are read back by each target's
reader (never the generator's code) and searched for every other target's reference. The values
themselves (an environment variable and files the build could read) appear in no artifact.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpspec.api import load_text
from mcpspec.diff.compare import compare_plans
from mcpspec.report.plan_output import plan_data
from mcpspec.rules.pipeline import LintOptions, lint_plan
from mcpspec.targets import get_target
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan

VALUE = "onespec-value-5c1d9e7a"
DIGEST = "@sha256:" + "ab" * 32
IMAGE = "registry.example/onespec" + DIGEST
# One secret per server (a secret bound to two servers is a finding of its own), each with a source per target.
SECRET = """\
  {name}:
    provider: env
    ref: ONESPEC_{upper}
    sources:
      systemd: {{{{provider: file, ref: {{tmp}}/systemd-{name}}}}}
      compose: {{{{provider: file, ref: {{tmp}}/compose-{name}}}}}
      k8s: {{{{provider: k8s-secret, ref: "onespec-k8s#{name}"}}}}
"""
SPEC = """\
version: 1
project: onespec
secrets:
""" + "".join(SECRET.format(name=name, upper=name.upper()) for name in ("token", "key")) + """\
images:
  onespec-server: {image}
servers:
  one:
    command: [/usr/local/bin/onespec-server, --flag]
    secrets:
      - {{use: token, as: {{env: TOKEN}}}}
  two:
    command: [onespec-server]
    secrets:
      - {{use: key, as: {{file: /run/secrets/key}}}}
"""
OPTIONS = {"k8s": BuildOptions(pod_pids_limit=64)}
# What names each target's sources in an artifact (a Kubernetes Secret's name and key are written apart).
MARKS = {
    "bwrap": ("ONESPEC_TOKEN", "ONESPEC_KEY"),
    "systemd": ("systemd-token", "systemd-key"),
    "compose": ("compose-token", "compose-key"),
    "k8s": ("onespec-k8s",),
}


def _sources(tmp: Path, secret: str) -> dict[str, tuple[str, str]]:
    """target -> (provider, ref) as its artifacts must read ``secret`` (token or key)."""
    return {
        "bwrap": ("env", f"ONESPEC_{secret.upper()}"),
        "systemd": ("file", f"{tmp}/systemd-{secret}"),
        "compose": ("file", f"{tmp}/compose-{secret}"),
        "k8s": ("k8s-secret", f"onespec-k8s#{secret}"),
    }


def _others(target: str) -> list[str]:
    return [mark for name, marks in MARKS.items() if name != target for mark in marks]


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The spec, with every source holding VALUE: the environment variables and the files."""
    for name in ("systemd-token", "compose-token", "systemd-key", "compose-key"):
        (tmp_path / name).write_text(VALUE + "\n")
    monkeypatch.setenv("ONESPEC_TOKEN", VALUE)
    monkeypatch.setenv("ONESPEC_KEY", VALUE)
    return SPEC.format(tmp=tmp_path, image=IMAGE)


def _build(text: str, target: str, options: BuildOptions | None = None) -> dict[str, str]:
    build = build_plan(load_text(text, "mcp-sandbox.yaml"), target, options=options or OPTIONS.get(target))
    assert not build.blocked, [r.message for r in build.findings if r.suppression is None and r.severity in ("critical", "high")]
    return build.files


@pytest.mark.parametrize("target", ["bwrap", "systemd", "compose", "k8s"])
def test_one_spec_builds_for_every_target_each_from_its_own_source(spec: str, tmp_path: Path, target: str) -> None:
    files = _build(spec, target)
    reader = __import__(f"mcpspec.targets.{target}.reader", fromlist=["read_build"])
    grants = reader.read_build(files)
    for server, secret in (("one", "token"), ("two", "key")):
        landed = {(landing.provider, landing.ref) for landing in grants[server].secrets}
        assert landed == {_sources(tmp_path, secret)[target]}, (target, server, landed)
    text = "\n".join(files.values())
    assert all(mark in text for mark in MARKS[target]) and not [mark for mark in _others(target) if mark in text]
    assert VALUE not in text


@pytest.mark.parametrize(("via", "source"), [("run", "bwrap"), ("podman-compose", "compose")])
def test_the_client_target_reads_the_source_of_what_its_entries_start(spec: str, via: str, source: str) -> None:
    options = BuildOptions(client="claude-code", spec_path="/srv/mcp/mcp-sandbox.yaml", via=via, out_dir="/srv/mcp/build" if via != "run" else None)
    text = "\n".join(_build(spec, "client", options).values())
    assert not [mark for mark in _others(source) if mark in text] and VALUE not in text
    if via != "run":  # the compose file under the client's build names compose's own sources
        assert all(mark in text for mark in MARKS["compose"])


def test_the_plan_shows_which_source_each_target_reads(spec: str) -> None:
    data: dict[str, Any] = plan_data(load_text(spec, "mcp-sandbox.yaml"))
    sources = data["servers"]["one"]["secrets"][0]["sources"]
    shown = {target: (entry["provider"]["value"], entry["provider"]["from"]) for target, entry in sources.items()}
    assert shown == {
        "bwrap": ("env", "secrets.token.provider"),
        "systemd": ("file", "secrets.token.sources.systemd.provider"),
        "compose": ("file", "secrets.token.sources.compose.provider"),
        "k8s": ("k8s-secret", "secrets.token.sources.k8s.provider"),
    }
    assert VALUE not in str(data)


def test_a_secret_without_sources_reads_as_before(tmp_path: Path) -> None:
    """Old specs keep their meaning: no sources, every target reads provider and ref, and the plan shows no sources."""
    lines = SPEC.format(tmp=tmp_path, image=IMAGE).splitlines()
    text = "\n".join(line for line in lines if "sources:" not in line and "{provider:" not in line) + "\n"
    plan = load_text(text, "mcp-sandbox.yaml")
    assert "sources" not in plan_data(plan)["servers"]["one"]["secrets"][0]
    grant = plan.servers["one"].secrets[0]
    assert all(grant.for_target(target) is grant for target in ("bwrap", "k8s"))


def test_a_source_a_target_cannot_read_stops_that_build_at_the_source(tmp_path: Path) -> None:
    text = SPEC.format(tmp=tmp_path, image=IMAGE).replace('k8s: {provider: k8s-secret, ref: "onespec-k8s#token"}', "k8s: {provider: env, ref: K8S_TOKEN}")
    build = build_plan(load_text(text, "mcp-sandbox.yaml"), "k8s", options=OPTIONS["k8s"])
    assert build.blocked
    assert {r.path for r in build.active if r.code == "TG001"} == {("secrets", "token", "sources", "k8s", "provider")}
    assert not build_plan(load_text(text, "mcp-sandbox.yaml"), "bwrap").blocked  # bwrap reads the default, which it can


def test_lint_checks_every_source(tmp_path: Path) -> None:
    """SE001 (a literal as a ref), SE005 (cloud credentials) and SE008 (a source in a writable mount) see each target's source."""
    text = f"""\
version: 1
project: onespec
workspace:
  root: {tmp_path}/ws
  dirs:
    out: {{mode: rw}}
secrets:
  token:
    provider: env
    ref: ONESPEC_TOKEN
    sources:
      bwrap: {{provider: env, ref: ghp_0123456789abcdefghijABCDEFGHIJ012345}}
      compose: {{provider: file, ref: ~/.aws/credentials}}
      systemd: {{provider: file, ref: {tmp_path}/ws/coder/run/out/token}}
servers:
  one:
    command: [onespec-server]
    mounts:
      - {{from: workspace.out, to: /out, mode: rw}}
    secrets:
      - {{use: token, as: {{env: TOKEN}}}}
"""
    results = lint_plan(load_text(text, "mcp-sandbox.yaml"), LintOptions())
    paths = {(r.code, r.path) for r in results if r.code in ("SE001", "SE005", "SE008")}
    assert ("SE001", ("secrets", "token", "sources", "bwrap", "ref")) in paths
    assert ("SE005", ("servers", "one", "secrets", 0, "use")) in paths
    assert ("SE008", ("secrets", "token", "sources", "systemd", "ref")) in paths


def test_images_are_given_once_for_every_container_target(spec: str) -> None:
    """A server without an image runs the images entry of its program (by its last path segment too); its own wins."""
    plan = load_text(spec, "mcp-sandbox.yaml")
    assert plan.servers["one"].image == plan.servers["two"].image == IMAGE
    assert plan.servers["one"].origin("image") == ("images", "onespec-server")
    for target in ("compose", "k8s"):
        text = "\n".join(_build(spec, target).values())
        assert text.count(IMAGE) >= 2, target
    own = spec.replace("  two:\n    command: [onespec-server]", "  two:\n    image: registry.example/own" + DIGEST + "\n    command: [onespec-server]")
    assert load_text(own, "mcp-sandbox.yaml").servers["two"].image == "registry.example/own" + DIGEST


def test_an_unpinned_image_rule_is_reported_where_it_is_written(spec: str) -> None:
    plan = load_text(spec.replace(IMAGE, "registry.example/onespec:latest"), "mcp-sandbox.yaml")
    found = {r.path for r in lint_plan(plan, LintOptions()) if r.code == "SP001"}
    assert found == {("images", "onespec-server")}


def test_the_client_target_names_its_source_target() -> None:
    client = get_target("client")
    assert client.secret_source(BuildOptions(via="run")) == "bwrap"  # type: ignore[attr-defined]
    assert client.secret_source(BuildOptions(via="docker-compose")) == "compose"  # type: ignore[attr-defined]


def test_diff_shows_a_change_of_one_targets_source(spec: str) -> None:
    before = load_text(spec, "mcp-sandbox.yaml")
    after = load_text(spec.replace('"onespec-k8s#token"', '"other-k8s#token"'), "mcp-sandbox.yaml")
    said = [change.message for change in compare_plans(before, after) if change.category == "secrets"]
    assert said == ["secret token source for k8s changed: k8s-secret:onespec-k8s#token -> k8s-secret:other-k8s#token"], said


def test_client_entries_start_a_server_with_an_env_secret_through_the_compose_wrapper(spec: str) -> None:
    """podman-compose refuses an environment: secret source: the entry runs the engine through mcpspec-compose.sh."""
    text = spec.replace("compose: {provider: file, ref: ", "compose: {provider: env, ref: COMPOSE_TOKEN} #")
    options = BuildOptions(client="claude-code", spec_path="/srv/mcp/mcp-sandbox.yaml", via="podman-compose", out_dir="/srv/mcp/build")
    files = _build(text, "client", options)
    wrapper = next(name for name in files if name.endswith("/mcpspec-compose.sh"))
    config = json.loads(files[".mcp.json"])["mcpServers"]
    assert config["one"]["command"] == f"/srv/mcp/build/{wrapper}" and config["one"]["args"][0] == "podman-compose"
    declared = yaml.safe_load(files[wrapper.replace("mcpspec-compose.sh", "compose.yaml")])["secrets"]
    assert 'printf %s "$COMPOSE_TOKEN"' in files[wrapper] and not [name for name, entry in declared.items() if "environment" in entry]


ENGINE = """\
d=$MCPSPEC_SECRETS_DIR
echo "dir=$d"
stat -c 'modes=%a' "$d"
for f in "$d"/*; do [ -e "$f" ] && stat -c 'file=%n %a' "$f"; done
[ -e "$d/token" ] && printf 'value=[%s]\\n' "$(cat "$d/token")"
echo "inherited=${ONESPEC_TOKEN-unset}"
exit 7
"""


@pytest.mark.parametrize(("given", "variable"), [(True, "ONESPEC_TOKEN"), (False, "ONESPEC_TOKEN"), (True, "dir"), (True, "status")])
def test_the_compose_wrapper_writes_env_secrets_privately_and_removes_them(spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, given: bool, variable: str) -> None:
    """mcpspec-compose.sh, run for real with a stand-in engine: the value lands byte for byte in a 0700 directory in memory,
    the engine does not inherit the variable, its status is the wrapper's, and nothing is left behind. An unset variable
    writes no file and says so (down, ps and logs still run)."""
    text = spec.replace("compose: {provider: file, ref: ", f"compose: {{provider: env, ref: {variable}}} #", 1)  # the token's only
    wrapper = tmp_path / "mcpspec-compose.sh"
    wrapper.write_text(_build(text, "compose")["mcpspec-compose.sh"])
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    (tmp_path / "runtime").mkdir()
    monkeypatch.delenv("ONESPEC_TOKEN", raising=False)
    if given:  # a variable named like one of a shell script's own (dir, status) must reach the file all the same
        monkeypatch.setenv(variable, VALUE + " \n")
    done = subprocess.run(["/bin/sh", str(wrapper), "/bin/sh", "-c", ENGINE.replace("ONESPEC_TOKEN", variable)], capture_output=True, text=True, timeout=30, check=False)
    said = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert done.returncode == 7 and said["modes"] == "700" and said["inherited"] == "unset", done
    assert Path(said["dir"]).parent == tmp_path / "runtime" and not list((tmp_path / "runtime").iterdir())
    if given:
        assert said["value"] == f"[{VALUE} ]" and said["file"] == f"{said['dir']}/token 444"  # $(cat) drops the newline, the file keeps it
        assert VALUE not in done.stderr
    else:
        assert "file" not in said and "ONESPEC_TOKEN is not set" in done.stderr


@pytest.mark.parametrize("variable", ["PATH", "IFS", "MCPSPEC_SECRETS_DIR", "mcpspec_dir"])
def test_a_secret_read_from_a_variable_the_wrapper_relies_on_is_refused(spec: str, variable: str) -> None:
    text = spec.replace("compose: {provider: file, ref: ", f"compose: {{provider: env, ref: {variable}}} #", 1)
    build = build_plan(load_text(text, "mcp-sandbox.yaml"), "compose", options=OPTIONS.get("compose"))
    said = [finding.message for finding in build.findings]
    assert build.blocked and "mcpspec-compose.sh" not in build.files and any("cannot be written in the compose wrapper safely" in message for message in said), said


def _env_wrapper(spec: str, tmp_path: Path) -> Path:
    text = spec.replace("compose: {provider: file, ref: ", "compose: {provider: env, ref: ONESPEC_TOKEN} #", 1)
    wrapper = tmp_path / "mcpspec-compose.sh"
    wrapper.write_text(_build(text, "compose")["mcpspec-compose.sh"])
    return wrapper


def _base(tmp_path: Path, kind: str) -> Path:
    import os

    base = tmp_path / kind
    if kind == "link":
        (tmp_path / "real").mkdir(mode=0o700)
        base.symlink_to(tmp_path / "real")
        return base
    base.mkdir()
    os.chmod(base, {"world-writable": 0o777, "sticky": 0o1777, "theirs": 0o700, "mine": 0o700}[kind])
    if kind == "theirs":
        os.chown(base, 65534, 65534)
    return base


@pytest.mark.parametrize("kind", ["world-writable", "link", "theirs", "relative"])
def test_the_compose_wrapper_refuses_a_runtime_directory_another_user_could_swap_its_secrets_directory_in(
    spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    """A non-sticky directory others may write (or one of theirs, or a link) lets another user rename the new
    0700 directory away and put one of theirs in its place before the first write: the secret lands in theirs.
    The wrapper refuses such an XDG_RUNTIME_DIR before it writes anything or runs the command."""
    import os

    wrapper = _env_wrapper(spec, tmp_path)
    base = Path("relative-runtime") if kind == "relative" else _base(tmp_path, kind)
    if kind == "world-writable":  # the premise: another user can rename what this user makes there
        (base / "victim").mkdir(mode=0o700)
        runuser = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mv", "victim", "moved"],
                                 cwd=base, capture_output=True, text=True, timeout=30, check=False)  # cwd: the pytest dirs above are root's 0700
        assert runuser.returncode == 0 and (base / "moved").is_dir(), runuser.stderr
    before = sorted(os.listdir(base)) if kind != "relative" else []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    monkeypatch.setenv("ONESPEC_TOKEN", VALUE)
    done = subprocess.run(["/bin/sh", str(wrapper), "/bin/sh", "-c", "echo ran"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1 and "ran" not in done.stdout and "set XDG_RUNTIME_DIR to one" in done.stderr, done
    assert (sorted(os.listdir(base)) if kind != "relative" else []) == before and not (tmp_path / "relative-runtime").exists()
    assert not list((tmp_path / "real").iterdir()) if kind == "link" else True


@pytest.mark.parametrize("kind", ["sticky", "mine"])
def test_the_compose_wrapper_takes_a_sticky_or_private_runtime_directory(spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str) -> None:
    wrapper = _env_wrapper(spec, tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(_base(tmp_path, kind)))
    monkeypatch.setenv("ONESPEC_TOKEN", VALUE)
    done = subprocess.run(["/bin/sh", str(wrapper), "/bin/sh", "-c", 'cat "$MCPSPEC_SECRETS_DIR/token"'], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0 and done.stdout == VALUE, done
    assert not list((tmp_path / kind).iterdir())


@pytest.mark.parametrize(("name", "number"), [("HUP", 1), ("QUIT", 3), ("USR1", 10), ("USR2", 12), ("PIPE", 13), ("ALRM", 14), ("TERM", 15)])
def test_the_compose_wrapper_removes_the_secrets_whatever_signal_ends_it(spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, number: int) -> None:
    """A signal whose default action ends the shell (USR1, ALRM, QUIT, PIPE...) killed the wrapper with the secrets'
    directory left in memory; now every one exits through the EXIT trap once the command ends."""
    import signal

    wrapper = _env_wrapper(spec, tmp_path)
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("ONESPEC_TOKEN", VALUE)
    engine = 'echo "$MCPSPEC_SECRETS_DIR"; read line; echo done'  # runs until its input ends
    with subprocess.Popen(["/bin/sh", str(wrapper), "/bin/sh", "-c", engine], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        directory = Path(proc.stdout.readline().strip())
        assert (directory / "token").read_text() == VALUE
        proc.send_signal(getattr(signal, f"SIG{name}"))
        proc.stdin.close()  # the command ends
        status = proc.wait(timeout=30)
    assert not directory.exists(), f"SIG{name} left {directory}"
    assert status == 128 + number
