"""The OCI form of the syscall policy, as `podman run --security-opt seccomp=FILE` (what a compose
file's `security_opt: [seccomp=FILE]` asks the engine for) loads it through runc and libseccomp:
the syscall probe inside gets every answer the policy promises, for both sets of socket families."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_tool
from mcpspec.targets.seccomp import oci_profile
from mcpspec.targets.seccomp.policy import policy_for_families
from podman_images import Recipe, image, podman_env

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from syscall_expect import SYSCALL_PROBE, mismatches

IMAGE = Recipe("mcpspec-k8s-test", ("python3",))  # Debian's python3, as the other container tests use


@pytest.mark.parametrize("families", [("AF_UNIX",), ("AF_INET", "AF_INET6", "AF_UNIX")], ids=["unix", "inet"])
def test_podman_applies_the_oci_profile_as_the_policy_says(families: tuple[str, ...], tmp_path: Path) -> None:
    podman = require_tool("podman")
    require_tool("runc")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(oci_profile(policy_for_families(families))), encoding="utf-8")
    probe = tmp_path / "probe.py"
    probe.write_text(SYSCALL_PROBE.read_text(encoding="utf-8"), encoding="utf-8")
    probe.chmod(0o644)
    tmp_path.chmod(0o755)
    done = subprocess.run(
        [podman, "run", "--rm", "--network", "none", "--user", "65532:65532", "--cap-drop", "ALL", "--security-opt", f"seccomp={profile}",
         "-v", f"{probe}:/probe.py:ro", image(IMAGE), "/usr/bin/python3", "/probe.py"],
        capture_output=True, text=True, timeout=180, env=podman_env(), check=False)
    assert done.returncode == 0, done.stderr
    assert mismatches(done.stdout, families) == {}
