"""The test images of the real container tests, and the podman settings every call goes through.

An image is a Debian rootfs built by mmdebstrap (from the configured apt sources) and imported
into podman's store under a tag derived from what it holds: built once, then reused by every
later test file and run. Python packages a recipe names are installed by pip into the image's
own python3 (``/usr/local/lib/python3.X/dist-packages``) while the rootfs is built; the
variables it names are set in the image's config, as a Dockerfile's ENV would.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from conftest import require_tool

CONTAINERS_CONF = Path(__file__).parent / "containers.conf"  # runc, default ulimits, netavark (see the file)


def podman_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF), **extra}


@dataclass(frozen=True, slots=True)
class Recipe:
    """What an image holds: Debian packages (a minbase rootfs) and Python requirements for its python3."""

    name: str  # localhost/<name>
    packages: tuple[str, ...]
    pip: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # NAME=VALUE the image's config sets (an imported rootfs has none, not even PATH)

    def mmdebstrap_args(self) -> list[str]:
        return ["--variant=minbase", f"--include={','.join(self.packages)}", "bookworm"]

    @property
    def tag(self) -> str:
        held = " ".join(self.mmdebstrap_args()) + "".join(f" pip:{requirement}" for requirement in self.pip) + "".join(f" env:{item}" for item in self.env)
        return f"localhost/{self.name}:" + hashlib.sha256(held.encode()).hexdigest()[:12]


def image(recipe: Recipe) -> str:
    """The recipe's image as ``localhost/NAME:TAG``, built when podman's store does not hold it yet."""
    return _image(recipe)


def pinned(recipe: Recipe) -> str:
    """The recipe's image pinned by the digest podman gives it (``localhost/NAME@sha256:...``), as a spec names it."""
    return _pinned(recipe)


@functools.cache
def _image(recipe: Recipe) -> str:
    podman = require_tool("podman")
    if subprocess.run([podman, "image", "exists", recipe.tag], env=podman_env(), check=False).returncode != 0:
        _build(podman, recipe)
    return recipe.tag


@functools.cache
def _pinned(recipe: Recipe) -> str:
    tag = _image(recipe)
    inspected = subprocess.run([require_tool("podman"), "image", "inspect", "--format", "{{.Digest}}", tag],
                               capture_output=True, text=True, check=True, timeout=60, env=podman_env())
    digest = inspected.stdout.strip()
    assert digest.startswith("sha256:"), inspected.stdout
    return f"{tag.rsplit(':', 1)[0]}@{digest}"


def _build(podman: str, recipe: Recipe) -> None:
    mmdebstrap = require_tool("mmdebstrap")
    with tempfile.TemporaryDirectory(prefix="mcpspec-image-") as work:
        tarball = Path(work) / "rootfs.tar"
        built = subprocess.run([mmdebstrap, "--quiet", *_pip_hooks(recipe), *recipe.mmdebstrap_args(), str(tarball)],
                               capture_output=True, text=True, timeout=900, check=False)
        assert built.returncode == 0, f"mmdebstrap failed:\n{built.stderr[-3000:]}"
        changes = [f"--change=ENV {item}" for item in recipe.env]
        imported = subprocess.run([podman, "import", *changes, str(tarball), recipe.tag], capture_output=True, text=True, timeout=300, env=podman_env(), check=False)
        assert imported.returncode == 0, imported.stderr


def _pip_hooks(recipe: Recipe) -> list[str]:
    """mmdebstrap hooks (run on this machine, ``$1`` the rootfs) that pip-install the recipe's requirements
    into the image's python3, and put each console script the image needs on its PATH.

    This python's pip picks the wheels, so compiled ones fit the image only when both are the same
    minor version (bookworm's python3 is 3.11): the caller checks that first."""
    if not recipe.pip:
        return []
    site = f"/usr/local/lib/python{sys.version_info.major}.{sys.version_info.minor}/dist-packages"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-script-location", "--disable-pip-version-check", "--target"]
    # pip's --target writes scripts whose first line names this python: write the image's own instead.
    script = "#!/usr/bin/python3\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
    hooks = [shlex.join(install) + f' "$1{site}" ' + shlex.join(recipe.pip)]
    for name, target in _console_scripts(recipe):
        module, func = target.split(":")
        hooks.append(f'printf %s {shlex.quote(script.format(module=module, func=func))} > "$1/usr/local/bin/{name}" && chmod 755 "$1/usr/local/bin/{name}"')
    hooks.append(f'rm -rf "$1{site}/bin" && chmod -R a+rX "$1{site}"')
    return [f"--customize-hook={hook}" for hook in hooks]


# Console scripts of the requirements the tests use (pip's --target scripts name this machine's python).
CONSOLE_SCRIPTS = {"mcp-proxy": ("mcp-proxy", "mcp_proxy.__main__:main")}


def _console_scripts(recipe: Recipe) -> list[tuple[str, str]]:
    return [CONSOLE_SCRIPTS[name] for requirement in recipe.pip for name in CONSOLE_SCRIPTS if requirement.startswith(name + "==")]
