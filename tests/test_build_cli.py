"""`mcpspec build`: outputs, --check, fail-closed exits, and what it never touches."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli

CODING = str(REPO / "examples" / "coding-agent.yaml")


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_build_writes_launchers_and_manifest_and_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    result = run_cli("build", CODING, "--target", "bwrap", "--out", str(first))
    assert result.returncode == 0, result.stderr
    assert "built 6 files for bwrap" in result.stderr
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(second)).returncode == 0
    assert _files(first) == _files(second)
    assert sorted(_files(first)) == [".mcpspec-build.json", "acme-coding-agent.tmpfiles.conf", "docs.py", "docs.squid.conf", "repo.py", "repo.squid.conf"]
    assert stat.S_IMODE((first / "repo.py").stat().st_mode) == 0o755
    assert stat.S_IMODE((first / "repo.squid.conf").stat().st_mode) == 0o644
    for name, data in _files(first).items():
        assert str(REPO).encode() not in data and str(tmp_path).encode() not in data, f"{name} names a path of the build machine"
    manifest = json.loads((first / ".mcpspec-build.json").read_text())
    assert manifest["target"] == "bwrap" and manifest["servers"]["repo"]["controls"]["egress-allowlist"] == "full"
    assert {f["rule"] for f in manifest["findings"]} == {"TG003"}  # every boundary full for bwrap; policies partial
    again = run_cli("build", CODING, "--target", "bwrap", "--out", str(first))
    assert "(0 changed)" in again.stderr


def test_check_reports_drift_with_a_diff_and_exit_1(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    clean = run_cli("build", CODING, "--target", "bwrap", "--out", str(out), "--check")
    assert clean.returncode == 0 and "up to date" in clean.stderr
    launcher = out / "repo.py"
    launcher.write_text(launcher.read_text().replace("'pids': 256,", "'pids': 99999,"))
    (out / "docs.squid.conf").unlink()
    drifted = run_cli("build", CODING, "--target", "bwrap", "--out", str(out), "--check")
    assert drifted.returncode == 1
    assert "-    'pids': 99999," in drifted.stdout and "+    'pids': 256," in drifted.stdout
    assert "missing:" in drifted.stdout and "docs.squid.conf" in drifted.stdout
    assert (out / "repo.py").read_text().count("'pids': 99999,") == 1, "--check must not write"


def test_rebuild_removes_only_files_an_earlier_build_wrote(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (tmp_path / "outside.txt").write_text("keep")
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    manifest = out / ".mcpspec-build.json"
    data = json.loads(manifest.read_text())
    data["files"] += ["../outside.txt", "/etc/hostname", "notes.txt/../../outside.txt"]
    manifest.write_text(json.dumps(data))
    result = run_cli("build", str(_one_server_spec(tmp_path)), "--target", "bwrap", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "removed 2 stale" in result.stderr
    assert sorted(_files(out)) == [".mcpspec-build.json", "acme-coding-agent.tmpfiles.conf", "notes.txt", "repo.py", "repo.squid.conf"]
    assert (tmp_path / "outside.txt").read_text() == "keep"


def _one_server_spec(tmp_path: Path) -> Path:
    """coding-agent.yaml without its docs server: a rebuild with it leaves docs' files stale."""
    smaller = tmp_path / "one.yaml"
    smaller.write_text((REPO / "examples" / "coding-agent.yaml").read_text().replace("servers: [repo, docs]", "servers: [repo]").split("\n  docs:\n")[0] + "\n")
    return smaller


def test_a_stale_file_edited_since_the_build_is_kept_and_named(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    (out / "docs.py").write_text((out / "docs.py").read_text() + "# my change\n")
    smaller = _one_server_spec(tmp_path)
    check = run_cli("build", str(smaller), "--target", "bwrap", "--out", str(out), "--check")
    assert f"stale: {out / 'docs.py'} (an earlier build wrote it; edited since, so a build would keep it)" in check.stdout
    assert f"stale: {out / 'docs.squid.conf'} (an earlier build wrote it; a build would remove it)" in check.stdout
    result = run_cli("build", str(smaller), "--target", "bwrap", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "removed 1 stale" in result.stderr
    assert f"kept {out / 'docs.py'}: an earlier build wrote it, and it is not what that build wrote" in result.stderr
    assert (out / "docs.py").read_text().endswith("# my change\n")
    assert not (out / "docs.squid.conf").exists()


def test_a_manifest_without_digests_removes_nothing(tmp_path: Path) -> None:
    """A manifest that records no digest (hand-made, or tampered with) cannot tell an edited file: every stale file is kept."""
    out = tmp_path / "out"
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    manifest = out / ".mcpspec-build.json"
    data = json.loads(manifest.read_text())
    assert set(data["digests"]) == set(data["files"]) - {".mcpspec-build.json"}
    del data["digests"]
    manifest.write_text(json.dumps(data))
    result = run_cli("build", str(_one_server_spec(tmp_path)), "--target", "bwrap", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "removed" not in result.stderr and result.stderr.count("kept ") == 2
    assert (out / "docs.py").exists() and (out / "docs.squid.conf").exists()


def test_unenforceable_spec_fails_closed_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("build", str(REPO / "examples" / "risky.yaml"), "--target", "bwrap", "--out", str(out))
    assert result.returncode == 1
    assert "TG001 [high] boundary-not-enforced" in result.stderr
    assert "nothing built for bwrap" in result.stderr
    assert not out.exists()


def test_fail_on_medium_stops_on_partial_enforcement(tmp_path: Path) -> None:
    result = run_cli("build", CODING, "--target", "systemd", "--out", str(tmp_path / "o"), "--fail-on", "medium")
    assert result.returncode == 1 and "TG002" in result.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "docker"], "unknown target 'docker'"),
        (["--target", "bwrap", "--fail-on", "never"], "--fail-on must be one of"),
        (["--target", "bwrap", "--fail-on", "critical"], "--fail-on must be one of"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = run_cli("build", CODING, *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_missing_spec_bad_spec_and_unusable_output_dir(tmp_path: Path) -> None:
    missing = run_cli("build", str(tmp_path / "nope.yaml"), "--target", "bwrap")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nproject: demo\nservers:\n  a:\n    comand: [x]\n")
    broken = run_cli("build", str(bad), "--target", "bwrap", "--out", str(tmp_path / "o"))
    assert broken.returncode == 1 and f"{bad}:5:5: SC001" in broken.stderr and not (tmp_path / "o").exists()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    blocked = run_cli("build", CODING, "--target", "bwrap", "--out", str(blocker))
    assert blocked.returncode == 2 and "is not a directory" in blocked.stderr and blocker.read_text() == "x"


def test_hostile_values_reach_the_launcher_as_exact_words(tmp_path: Path) -> None:
    """Every spec string in a launcher is part of one Python literal: Python reads back exactly the spec's bytes."""
    hostile = ["$(touch pwned)", "`touch pwned`", "a'b\"c", "x\ny", "; rm -rf / #", "*", "~root", "${HOME}", "\\", "-e", "\u2028'''\"\"\"", "é\x1b[2J"]
    # A shell script whose positional parameters are the hostile words: only the script is shell code.
    launch = ["/bin/sh", "-c", 'printf "%s\\n" "$@"', "sh"]
    spec = tmp_path / "hostile.yaml"
    spec.write_text(
        "version: 1\nproject: demo\nservers:\n  odd:\n"
        f"    command: {json.dumps([*launch, *hostile])}\n"
        f"    env: {{set: {json.dumps({f'V{i}': value for i, value in enumerate(hostile)})}}}\n"
        "    mounts:\n      - {from: \"/srv/it's $(x)\", to: \"/data/a b\"}\n"
        "    tools:\n      t: {effects: [reads_private]}\n"
    )
    out = tmp_path / "out"
    # SP003 (a shell script) fires here; the build honours the config that turns it off.
    config = tmp_path / "lint.yaml"
    config.write_text("ignore: [SP003]\n")
    assert run_cli("build", str(spec), "--target", "bwrap", "--out", str(out)).returncode == 1
    assert run_cli("build", str(spec), "--target", "bwrap", "--out", str(out), "--config", str(config)).returncode == 0
    source = (out / "odd.py").read_text(encoding="utf-8")
    tree = ast.parse(source)  # the whole launcher is valid Python
    configs = [node for node in tree.body if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CONFIG" for t in node.targets)]
    assert len(configs) == 1
    config = ast.literal_eval(configs[0].value)  # a literal: nothing in it runs
    assert config["command"] == [*launch, *hostile]
    assert sorted(f"{name}={value}" for name, value in config["setenv"] if name != "PATH") == sorted(f"V{i}={value}" for i, value in enumerate(hostile))
    assert {"kind": "host", "mode": "ro", "source": "/srv/it's $(x)", "target": "/data/a b", "size": 0} in config["mounts"]
    head = source.split("# ---- mcpspec bwrap launcher runtime")[0]
    allowed = ("#", "CONFIG = {", "    '", "}", "import _signal", "EARLY_SIGNALS", "for _signum", "    _signal.signal",
               "if isinstance(getattr(__import__('sys'), 'last_value', None), KeyboardInterrupt):", "    EARLY_SIGNALS.append(_signal.SIGINT)")
    assert all(line.startswith(allowed) or not line for line in head.splitlines()), head
    assert not (tmp_path / "pwned").exists() and not Path(os.getcwd(), "pwned").exists()


def test_external_servers_are_named_as_not_built(tmp_path: Path) -> None:
    spec = tmp_path / "mixed.yaml"
    spec.write_text(
        "version: 1\nproject: demo\nservers:\n"
        "  local:\n    command: [mcp-local]\n    tools:\n      t: {effects: [reads_private]}\n"
        "  remote:\n    placement: external\n    transport: {type: http, url: 'https://mcp.example.com/x', auth: {type: oauth2, audience: 'https://mcp.example.com/x'}}\n"
        "    tools:\n      t: {effects: [reads_private]}\n"
    )
    result = run_cli("build", str(spec), "--target", "bwrap", "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert "not built (placement: external, they run elsewhere): remote" in result.stderr
    assert sorted(_files(tmp_path / "o")) == [".mcpspec-build.json", "demo.tmpfiles.conf", "local.py"]
    assert json.loads((tmp_path / "o" / ".mcpspec-build.json").read_text())["servers"]["remote"]["built"] is False


DANGEROUS = """version: 1
project: demo
servers:
  ops:
    command: [mcp-ops]
    mounts:
      - {from: ~/.ssh, to: /keys}
      - {from: /var/run/docker.sock, to: /var/run/docker.sock}
    tools:
      run: {effects: [reads_private]}
"""


def test_the_build_runs_the_risk_rules_and_refuses_a_known_dangerous_spec(tmp_path: Path) -> None:
    """A spec that mounts ~/.ssh and the docker socket: lint's findings, word for word, and nothing written."""
    spec = tmp_path / "ops.yaml"
    spec.write_text(DANGEROUS)
    linted = run_cli("lint", str(spec), "--fail-on", "high")
    lint_lines = [line for line in linted.stdout.splitlines() if " FS00" in line]
    assert len(lint_lines) == 2 and any("~/.ssh" in line for line in lint_lines) and any("docker.sock" in line for line in lint_lines)
    for target in ("bwrap", "systemd"):
        out = tmp_path / f"out-{target}"
        built = run_cli("build", str(spec), "--target", target, "--out", str(out))
        assert built.returncode == 1, built.stderr
        assert all(line in built.stderr.splitlines() for line in lint_lines), built.stderr
        assert "nothing built" in built.stderr and not out.exists()


def test_waived_or_ignored_risks_let_the_build_through(tmp_path: Path) -> None:
    waived = tmp_path / "waived.yaml"
    waived.write_text(
        DANGEROUS
        + "waivers:\n"
        + "  - {rule: FS001, at: 'servers.ops.mounts[0].from', reason: deploy keys of this host only, expires: 2999-01-01}\n"
        + "  - {rule: FS002, at: 'servers.ops.mounts[1].from', reason: the ops server drives docker, expires: 2999-01-01}\n"
    )
    done = run_cli("build", str(waived), "--target", "bwrap", "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a" / "ops.py").is_file()
    (tmp_path / ".mcpspec.yaml").write_text("ignore: [FS001, FS002]\n")
    spec = tmp_path / "ops.yaml"
    spec.write_text(DANGEROUS)
    assert run_cli("build", str(spec), "--target", "bwrap", "--out", str(tmp_path / "b"), cwd=tmp_path).returncode == 0
    # A lower --fail-on stops on the lesser findings the waivers leave (the spec has low ones).
    assert run_cli("build", str(waived), "--target", "bwrap", "--out", str(tmp_path / "c"), "--fail-on", "low").returncode == 1


def test_the_api_never_writes_a_blocked_build(tmp_path: Path) -> None:
    from mcpspec import api
    from mcpspec.targets.writer import OutputError, write_build

    spec = tmp_path / "ops.yaml"
    spec.write_text(DANGEROUS)
    outcome = api.build_file(spec, "bwrap")
    found, built = outcome.lint, outcome.build
    assert outcome.stopped and built is not None and built.blocked
    assert {r.code for r in found.results} >= {"FS001", "FS002"}
    with pytest.raises(OutputError):
        write_build(tmp_path / "out", built)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("field", [
    '    command: [/usr/bin/true, "x\\0--bind\\0/\\0/host"]\n',
    '    command: [/usr/bin/true]\n    env: {set: {GREETING: "x\\0--bind\\0/\\0/host"}}\n',
    '    command: [/usr/bin/true]\n    mounts: [{from: "/srv/a\\0b", to: /data}]\n',
    '    command: [/usr/bin/true]\n    workdir: "/w\\0--bind"\n',
])
def test_a_nul_in_any_value_never_reaches_the_launcher(field: str, tmp_path: Path) -> None:
    """bwrap reads its arguments NUL-separated: one NUL in a value (`x\\0--bind\\0/\\0/host`) would add arguments."""
    spec = tmp_path / "nul.yaml"
    spec.write_text("version: 1\nproject: demo\nservers:\n  odd:\n" + field + "    tools:\n      t: {effects: [reads_private]}\n")
    out = tmp_path / "out"
    result = run_cli("build", str(spec), "--target", "bwrap", "--out", str(out))
    assert result.returncode == 1 and ("TG004" in result.stderr or "SC004" in result.stderr), result.stderr
    assert not out.exists()


def _tamper(out: Path, **digests: str) -> None:
    """List ``digests`` (name -> digest) in the manifest of ``out`` as files an earlier build wrote."""
    manifest = out / ".mcpspec-build.json"
    data = json.loads(manifest.read_text())
    data["files"] += list(digests)
    data["digests"].update(digests)
    manifest.write_text(json.dumps(data))


def _sha(text: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_a_tampered_manifest_cannot_remove_files_outside_the_directories_builds_write(tmp_path: Path) -> None:
    """A manifest committed by someone else may list any name with the digest of a file whose
    content is predictable (`.git/HEAD`): only the output's own top level and the directories
    targets write in (.vscode, compose...) are ever cleaned (a red team's finding)."""
    out = tmp_path / "out"
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "notes").mkdir()
    (out / "notes" / "a.txt").write_text("mine\n")
    _tamper(out, **{".git/HEAD": _sha("ref: refs/heads/main\n"), "notes/a.txt": _sha("mine\n")})
    result = run_cli("build", CODING, "--target", "bwrap", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / ".git" / "HEAD").exists() and (out / "notes" / "a.txt").exists()


@pytest.mark.parametrize("kind", ["fifo", "link-to-zero", "huge"])
def test_a_manifest_that_is_no_regular_file_is_not_read(tmp_path: Path, kind: str) -> None:
    """A FIFO once hung the build, a link to /dev/zero or a huge file exhausted memory: none is read, nor followed."""
    out = tmp_path / "out"
    out.mkdir()
    manifest = out / ".mcpspec-build.json"
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "link-to-zero":
        manifest.symlink_to("/dev/zero")
    else:
        with manifest.open("wb") as handle:
            handle.truncate(300 << 20)  # sparse: nothing is written to disk
    for args in (["--check"], []):
        result = run_cli("build", CODING, "--target", "bwrap", "--out", str(out), *args, timeout=60)
        assert "internal error" not in result.stderr and result.returncode in (0, 1), result.stderr


def test_a_huge_stale_file_is_kept_unread(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    with (out / "big.bin").open("wb") as handle:
        handle.truncate(300 << 20)
    _tamper(out, **{"big.bin": _sha("")})
    result = run_cli("build", CODING, "--target", "bwrap", "--out", str(out), timeout=60)
    assert result.returncode == 0 and "internal error" not in result.stderr, result.stderr
    assert (out / "big.bin").exists() and f"kept {out / 'big.bin'}" in result.stderr


def test_check_reports_what_a_build_does_with_a_stale_name_under_a_linked_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mcp.json").write_text("{}\n")
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    (out / ".vscode").symlink_to(outside)
    _tamper(out, **{".vscode/mcp.json": _sha("{}\n")})
    check = run_cli("build", CODING, "--target", "bwrap", "--out", str(out), "--check")
    assert f"stale: {out / '.vscode' / 'mcp.json'}" not in check.stdout, check.stdout
    assert run_cli("build", CODING, "--target", "bwrap", "--out", str(out)).returncode == 0
    assert (outside / "mcp.json").exists()


def test_a_proxy_image_with_credentials_is_refused_and_not_echoed() -> None:
    token = "ghp_" + "A1b2" * 9
    result = run_cli("build", str(REPO / "examples" / "package-analysis.yaml"), "--target", "compose", "--out", "/nonexistent/out", "--proxy-image", f"u:{token}@localhost/squid")
    assert result.returncode == 2 and "is not an image reference" in result.stderr and token not in result.stderr, result.stderr


def test_swapping_an_output_directory_for_a_link_mid_build_takes_nothing_outside(tmp_path: Path) -> None:
    """A red team swapped `.vscode` with a link to another directory (renameat2 RENAME_EXCHANGE in a
    tight loop) while the build ran: about one build in eight wrote mcp.json there or removed a
    stale file there. The build now holds each such directory open and works through it."""
    import ctypes
    import hashlib
    import threading

    from mcpspec import api
    from mcpspec.targets.base import BuildOptions
    from mcpspec.targets.writer import OutputError, write_build

    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    built = api.build_file(CODING, "client", build_options=BuildOptions(client="vscode"), out_dir=out).build
    assert built is not None
    (out / ".vscode").mkdir()
    (out / ".other").symlink_to(outside)
    stale = b"stale content\n"
    digest = "sha256:" + hashlib.sha256(stale).hexdigest()
    libc = ctypes.CDLL(None, use_errno=True)
    stop = threading.Event()

    def swap() -> None:
        a, b = str(out / ".vscode").encode(), str(out / ".other").encode()
        while not stop.is_set():
            libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    escaped = []
    try:
        for _ in range(150):
            (outside / "old.json").write_bytes(stale)
            real = out / ".vscode" if (out / ".vscode").is_dir() and not (out / ".vscode").is_symlink() else out / ".other"
            with contextlib.suppress(OSError):
                (real / "old.json").write_bytes(stale)
            (out / ".mcpspec-build.json").write_text(json.dumps({"files": [".vscode/old.json"], "digests": {".vscode/old.json": digest}}))
            with contextlib.suppress(OutputError):
                write_build(out, built)
            if (outside / "mcp.json").exists() or not (outside / "old.json").exists():
                escaped.append(sorted(path.name for path in outside.iterdir()))
                (outside / "mcp.json").unlink(missing_ok=True)
    finally:
        stop.set()
        racer.join()
    assert not escaped, escaped


@pytest.mark.parametrize("via", ["run", "podman-compose"])
@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "vscode", "cursor", "codex"])
def test_every_name_the_client_target_writes_is_one_a_rebuild_may_clean(tmp_path: Path, client: str, via: str) -> None:
    """The writer cleans stale files only at the top level and in OUTPUT_SUBDIRS: a target that
    starts writing in another directory must be added there, or its stale files would stay forever."""
    from mcpspec import api
    from mcpspec.targets.base import BuildOptions
    from mcpspec.targets.writer import _OWN_NAME

    proxy = "localhost/squid@sha256:" + "c" * 64 if via != "run" else None
    options = BuildOptions(client=client, via=via, proxy_image=proxy)  # type: ignore[arg-type]
    built = api.build_file(REPO / "examples" / "package-analysis.yaml", "client", build_options=options, out_dir=tmp_path).build
    assert built is not None and built.files
    assert [name for name in built.files if not _OWN_NAME.fullmatch(name)] == []


def test_every_name_the_other_targets_write_is_one_a_rebuild_may_clean() -> None:
    names = [path.relative_to(example).as_posix() for target in ("bwrap", "systemd", "compose", "k8s") for example in (REPO / "targets" / target).iterdir() if example.is_dir() for path in example.rglob("*") if path.is_file()]
    assert names
    from mcpspec.targets.writer import _OWN_NAME

    assert [name for name in names if not _OWN_NAME.fullmatch(name)] == []


def _build_under_umask(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcpspec build ARGS` in a process whose umask is ``umask`` from its first instruction on."""
    return subprocess.run([sys.executable, "-m", "mcpspec", "build", *args], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False, preexec_fn=lambda: os.umask(umask))


@pytest.mark.parametrize("umask", [0o000, 0o077])
def test_the_build_makes_no_directory_or_file_wider_than_0755_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """Under umask 000 the output was made 0777: another local user could swap a unit or launcher
    in it before it was installed. Every directory the build makes is at most 0755, every file at
    most 0644 (a launcher 0755), and a directory that was there keeps its own, tighter mode."""
    tight = tmp_path / "tight"
    tight.mkdir(0o700)
    tight.chmod(0o700)
    outputs = {
        "bwrap": (tight / "new" / "deeper" / "bwrap", ["--target", "bwrap"]),
        "client": (tmp_path / "fresh" / "client", ["--target", "client", "--client", "vscode", "--via", "podman-compose",
                                                  "--proxy-image", "localhost/squid@sha256:" + "c" * 64]),
        "systemd": (tight, ["--target", "systemd"]),
    }
    for name, (out, args) in outputs.items():
        spec = str(REPO / "examples" / ("package-analysis.yaml" if name == "client" else "coding-agent.yaml"))
        result = _build_under_umask(umask, spec, *args, "--out", str(out))
        assert result.returncode == 0, (name, result.stderr)
    assert stat.S_IMODE(tight.stat().st_mode) == 0o700, "a directory that was there is not chmodded"
    seen_dirs = seen_files = 0
    for path in tmp_path.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_dir():
            seen_dirs += 1
            assert mode & ~0o755 == 0, f"{path.relative_to(tmp_path)} is {oct(mode)} under umask {oct(umask)}"
        else:
            seen_files += 1
            widest = 0o755 if path.suffix == ".py" else 0o644
            assert mode & ~widest == 0, f"{path.relative_to(tmp_path)} is {oct(mode)} under umask {oct(umask)}"
    made = [tmp_path / "tight" / "new", tmp_path / "tight" / "new" / "deeper", tmp_path / "fresh", tmp_path / "fresh" / "client" / "compose"]
    assert all(path.is_dir() for path in made) and seen_dirs >= 6 and seen_files >= 8
    if umask == 0o000:  # exactly what was asked for: the umask takes nothing away
        assert {oct(stat.S_IMODE(path.stat().st_mode)) for path in made} == {"0o755"}
        assert stat.S_IMODE((tight / "new" / "deeper" / "bwrap" / "repo.py").stat().st_mode) == 0o755
