"""The files of a build directory that `mcpspec verify --build-dir` would run, checked before it
runs anything: each must hold exactly what its build manifest records and what a fresh build of
the spec writes. A launcher edited to behave only while verify watches is refused, never run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcpspec.targets.build import MANIFEST, Build, file_digest
from mcpspec.targets.writer import read_regular


class BuildDirError(Exception):
    """The build directory cannot be verified (verify runs nothing; exit status 2)."""


@dataclass(frozen=True)
class ServerFiles:
    """What one server's launcher runs and reads from the build directory, as checked."""

    launcher: str
    squid: str | None


def server_files(build_dir: Path, spec: Path, fresh: Build, servers: Sequence[str]) -> dict[str, ServerFiles]:
    """Each server's launcher (and the squid.conf it reads), when every one matches its manifest's
    digest and the fresh build ``fresh`` of ``spec``; BuildDirError naming the first that does not."""
    rebuild = f"nothing was run; rebuild it with `mcpspec build {spec} --target bwrap --out {build_dir}`"
    digests = _digests(build_dir, rebuild)
    checked: dict[str, ServerFiles] = {}
    for server in servers:
        launcher = _checked(build_dir, f"{server}.py", digests, fresh, spec, rebuild)
        squid_name = f"{server}.squid.conf"
        squid = _checked(build_dir, squid_name, digests, fresh, spec, rebuild) if squid_name in fresh.files else None
        checked[server] = ServerFiles(launcher, squid)
    return checked


def _digests(build_dir: Path, rebuild: str) -> dict[str, str]:
    data = read_regular(build_dir / MANIFEST)
    if data is None:
        raise BuildDirError(f"{build_dir}: no build manifest ({MANIFEST}), so nothing shows its launchers are the ones built; {rebuild}")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BuildDirError(f"{build_dir / MANIFEST}: not a build manifest (not JSON); {rebuild}") from None
    digests = manifest.get("digests") if isinstance(manifest, dict) else None
    if not isinstance(digests, dict) or not digests:
        raise BuildDirError(f"{build_dir / MANIFEST}: records no file digests (an older build), so nothing shows its launchers are the ones built; {rebuild}")
    if manifest.get("target") != "bwrap":
        raise BuildDirError(f"{build_dir}: a build for the {manifest.get('target')!s} target, not bwrap; {rebuild}")
    return {name: value for name, value in digests.items() if isinstance(name, str) and isinstance(value, str)}


def _checked(build_dir: Path, name: str, digests: dict[str, str], fresh: Build, spec: Path, rebuild: str) -> str:
    path = build_dir / name
    data = read_regular(path)
    if data is None:
        raise BuildDirError(f"{path}: missing, or not a regular file; {rebuild}")
    recorded = digests.get(name)
    if recorded is None:
        raise BuildDirError(f"{path}: {MANIFEST} records no digest for it; {rebuild}")
    if file_digest(data) != recorded:
        raise BuildDirError(f"{path}: edited since it was built (its SHA-256 is not the one {MANIFEST} records); {rebuild}")
    if data != fresh.files[name].encode("utf-8"):
        raise BuildDirError(f"{path}: not what `mcpspec build {spec} --target bwrap` writes now (built from another spec or "
                            f"another mcpspec version, or edited together with its manifest); {rebuild}")
    return data.decode("utf-8")
