"""Issue 25 items 1 and 2 on bubblewrap, with real processes: the syscall probe runs as the
server of generated launchers (started as root, as MCP clients start them) and every dangerous
syscall is refused while the controls still work; a key in the launching process's session
keyring is out of the sandbox's reach, by the filter and by the fresh session keyring alone.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool
from mcpspec.targets.seccomp.bpf import RET, RET_ALLOW
from mcpspec.targets.seccomp.tables import SYSCALLS

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Listener, Sandbox, sandbox_python_matches
from syscall_expect import mismatches

KEY_PAYLOAD = b"root-key-3c8e51"
KEY_NAME = b"mcpspec-probe-secret"  # the name syscall_probe.py searches for
KEYCTL_JOIN_SESSION_KEYRING = 1
KEY_SPEC_SESSION_KEYRING = -3


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    for tool in ("bwrap", "socat", "squid", "/usr/bin/python3"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the seccomp tests run launchers as root, as MCP clients on servers do (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the seccomp tests run launchers as root")
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter")
    box = Sandbox()
    yield box
    box.cleanup()


def _probe_launcher(box: Sandbox, name: str, server_yaml: str = "") -> Path:
    spec = box.spec(name, server_yaml)
    text = spec.read_text(encoding="utf-8").replace("/probe/probe_server.py", "/probe/syscall_probe.py", 1)
    spec.write_text(text, encoding="utf-8")
    return box.build(spec)


def _run(launcher: Path, run_id: str, preexec: object = None) -> str:
    done = subprocess.run([str(launcher)], capture_output=True, timeout=90, check=False, env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": run_id},
                          preexec_fn=preexec)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    return done.stdout.decode()


def test_a_server_without_egress_gets_every_dangerous_syscall_refused_and_only_unix_sockets(sandbox: Sandbox) -> None:
    launcher = _probe_launcher(sandbox, "sc-deny")
    assert mismatches(_run(launcher, "sc-deny"), ("AF_UNIX",)) == {}


def test_a_server_with_an_egress_allowlist_gets_inet_sockets_and_nothing_more(sandbox: Sandbox) -> None:
    listener = Listener("127.0.0.1")
    try:
        launcher = _probe_launcher(sandbox, "sc-allow", f'    egress: {{allow: ["127.0.0.1:{listener.port}"]}}')
        assert mismatches(_run(launcher, "sc-allow"), ("AF_UNIX", "AF_INET", "AF_INET6")) == {}
    finally:
        listener.close()


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _with_a_key_in_a_session_keyring_of_its_own() -> None:
    """preexec: the launching process joins a new session keyring (so the test leaves the
    machine's keyrings alone) and puts a key in it, as pam_keyinit and a login would."""
    libc, numbers = _libc(), SYSCALLS[os.uname().machine]
    if libc.syscall(ctypes.c_long(numbers["keyctl"]), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), b"mcpspec-test") < 0:
        os._exit(90)
    if libc.syscall(ctypes.c_long(numbers["add_key"]), b"user", KEY_NAME, KEY_PAYLOAD, ctypes.c_long(len(KEY_PAYLOAD)), ctypes.c_long(KEY_SPEC_SESSION_KEYRING)) < 0:
        os._exit(91)


def _edited(launcher: Path, name: str, allow_everything: bool, keep_keyring: bool) -> Path:
    """A copy of the launcher weakened on purpose, to show what each defence holds on its own."""
    text = launcher.read_text(encoding="utf-8")
    if allow_everything:
        allow_all = struct.pack("<HBBI", RET, 0, 0, RET_ALLOW).hex()
        text, count = re.subn(r"'seccomp': \{[^}]*\}", f"'seccomp': {{'x86_64': {allow_all!r}, 'aarch64': {allow_all!r}}}", text)
        assert count == 1
    if keep_keyring:
        assert text.count("            join_fresh_session_keyring(self.c.keyctl)\n") == 1
        text = text.replace("            join_fresh_session_keyring(self.c.keyctl)\n", "")
    copy = launcher.with_name(f"{name}.py")
    copy.write_text(text, encoding="utf-8")
    copy.chmod(0o755)
    return copy


def _key_read(output: str) -> str:
    return str(json.loads(output.strip().splitlines()[-1])["keyctl_read_launcher_key"])


def test_a_key_in_the_launchers_session_keyring_is_out_of_the_sandboxs_reach(sandbox: Sandbox) -> None:
    launcher = _probe_launcher(sandbox, "sc-keys")
    preexec = _with_a_key_in_a_session_keyring_of_its_own
    # The attack as the red team ran it: no filter, the login session's keyring handed down.
    assert _key_read(_run(_edited(launcher, "no-filter-no-fresh-keyring", True, True), "k0", preexec)) == "ok"
    # The fresh session keyring alone hides the key...
    assert _key_read(_run(_edited(launcher, "no-filter", True, False), "k1", preexec)) == "ENOKEY"
    # ...and the launcher as built also refuses keyctl, add_key and request_key outright.
    output = _run(launcher, "k2", preexec)
    assert _key_read(output) == "EPERM"
    assert mismatches(output, ("AF_UNIX",)) == {}
