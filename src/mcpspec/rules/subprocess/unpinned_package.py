"""
## What it does
Flags packages installed or run without an exact version: a server `package` with no `version` (or
`latest`, `*`, a range such as `^1.2` or `>=1.0`), and launch commands that fetch whatever is newest:
`npx -y pkg` without `@1.2.3`, `uvx pkg` without `==` or `@`, `pipx run pkg` or `pip install pkg`
without `==`, `npm install pkg` without `@1.2.3`, `docker run image` without an `@sha256:` digest.

## Why is this risky
An unpinned launcher downloads and runs the newest release on every start. One malicious release
(postmark-mcp 1.0.16 added a hidden Bcc to every email it sent) or one hijacked maintainer account then
reaches every machine at its next launch, with no review and no diff, and with the server's secrets in
reach. A pinned version changes only when you change the spec.

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    package: {registry: npm, name: some-fetch-mcp}
    command: [npx, -y, some-fetch-mcp]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    package: {registry: npm, name: some-fetch-mcp, version: "1.4.2"}
    command: [npx, -y, some-fetch-mcp@1.4.2]
```

## References
- OWASP MCP Top 10: MCP04 Software Supply Chain Attacks & Dependency Tampering; MCP03 Tool Poisoning (rug pulls)
- OWASP Top 10 for LLM Applications: LLM03 Supply Chain
- CWE-494: Download of Code Without Integrity Check; CWE-1357: Reliance on Insufficiently Trustworthy Component
- Incident: postmark-mcp malicious npm releases 1.0.16-1.0.18 (Koi Security, 2025-09-25)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.subprocess._common import program_name, server_segments

# A version that is a moving target rather than one release.
_FLOATING = re.compile(r"^(|latest|next|canary|beta|alpha|stable|\*|x)$|^[\^~<>!]|[*\s,]|\|\||(^|\.)x(\.|$)", re.IGNORECASE)

# Item found in a command: index of the word within its segment, and what is wrong with it.
Problem = tuple[int, str]
Detector = Callable[[tuple[str, ...], int], list[Problem]]


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if server.package is not None:
            finding = _package_finding(server)
            if finding is not None:
                yield finding
        yield from _command_findings(plan, server)


def _package_finding(server: EffectiveSandbox) -> Finding | None:
    package = server.package
    assert package is not None
    where: SpecPath = (*server.path, "package", "version")
    what = f"server '{server.name}' installs {package.registry} package '{package.name}'"
    if package.version is None:
        return Finding(path=where, message=f"{what} with no version (whatever is newest at launch)")
    if floating(package.version):
        return Finding(path=where, message=f"{what} at version '{package.version}', which is not one exact release")
    return None


def floating(version: str) -> bool:
    """Whether a version names a moving target (a tag, a range) rather than one release; '=1.2.3' is exact."""
    return _FLOATING.search(re.sub(r"^={1,3}", "", version.strip())) is not None


def _command_findings(plan: Plan, server: EffectiveSandbox) -> Iterator[Finding]:
    problems: dict[SpecPath, list[str]] = {}
    for segment in server_segments(plan, server):
        start = segment.start
        if start is None:
            continue
        detector = _DETECTORS.get(program_name(segment.words[start]))
        for index, text in detector(segment.words, start) if detector else []:
            problems.setdefault(segment.path(index), []).append(text)
    for path, texts in problems.items():
        yield Finding(path=path, message=f"server '{server.name}' {' and '.join(dict.fromkeys(texts))}")


# --- what each launcher's words mean ---


Word = tuple[int, str]


def _parse(words: tuple[str, ...], start: int, takes_value: frozenset[str]) -> tuple[list[Word], dict[str, list[Word]]]:
    """The plain words after ``start`` and the values of options in ``takes_value``, each with its index."""
    plain: list[Word] = []
    values: dict[str, list[Word]] = {}
    index = start
    while index < len(words):
        word = words[index]
        if word == "--":
            plain += list(enumerate(words[index + 1 :], start=index + 1))
            break
        if word.startswith("-") and len(word) > 1:
            name, has_value, value = word.partition("=")
            if name in takes_value and has_value:
                values.setdefault(name, []).append((index, value))
            elif name in takes_value and index + 1 < len(words):
                index += 1
                values.setdefault(name, []).append((index, words[index]))
        else:
            plain.append((index, word))
        index += 1
    return plain, values


def npm_pinned(spec: str) -> bool:
    """``name@1.2.3`` or ``@scope/name@1.2.3``; local paths and URLs are not registry installs."""
    if spec.startswith((".", "/", "~")) or "://" in spec or spec.endswith(".tgz"):
        return True
    name_start = 1 if spec.startswith("@") else 0
    at = spec.find("@", name_start)
    return at != -1 and not floating(spec[at + 1 :])


def _npx(words: tuple[str, ...], start: int, first: int | None = None) -> list[Problem]:
    """npx / bunx / npm exec / pnpm dlx / yarn dlx: ``--package`` names the package, else the first plain word."""
    plain, values = _parse(words, start + 1 if first is None else first, frozenset({"-p", "--package", "-c", "--call"}))
    packages = values.get("-p", []) + values.get("--package", []) or plain[:1]
    return [(i, f"runs '{w}' through {program_name(words[start])} without an exact version") for i, w in packages if not npm_pinned(w)]


def _npm_like(words: tuple[str, ...], start: int) -> list[Problem]:
    """npm / pnpm / yarn: ``exec``/``dlx`` run a package, ``install``/``add`` install named ones."""
    tool = program_name(words[start])
    plain, _ = _parse(words, start + 1, frozenset({"--prefix", "--registry", "-w", "--workspace", "-C", "--dir"}))
    if plain[:1] and plain[0][1] == "global":  # yarn global add
        plain = plain[1:]
    if not plain:
        return []
    index, sub = plain[0]
    if sub in ("exec", "x", "dlx"):
        return _npx(words, start, first=index + 1)
    if sub in ("install", "i", "in", "add"):
        return [(i, f"installs '{w}' with {tool} {sub} without an exact version") for i, w in plain[1:] if not npm_pinned(w)]
    return []


def pip_pinned(spec: str) -> bool:
    if spec.startswith((".", "/", "~")) or "://" in spec or re.search(r"\.(whl|zip|tar\.gz)$", spec):
        return True
    return "==" in spec or " @ " in spec


_PIP_VALUES = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--platform", "--python-version",
    "--implementation", "--abi", "--upgrade-strategy", "--cache-dir", "--log", "--proxy", "--timeout",
    "--retries", "--trusted-host", "--cert", "--client-cert", "--config-settings", "-C", "--report",
    "--only-binary", "--no-binary", "--python", "-p",
})


def _pip(words: tuple[str, ...], start: int) -> list[Problem]:
    plain, _ = _parse(words, start + 1, _PIP_VALUES)
    if not plain or plain[0][1] != "install":
        return []
    return [(i, f"installs '{w}' with pip without an exact version") for i, w in plain[1:] if not pip_pinned(w)]


def _python(words: tuple[str, ...], start: int) -> list[Problem]:
    """``python -m pip install ...``."""
    if words[start + 1 : start + 3] == ("-m", "pip"):
        return _pip(words, start + 2)
    return []


_UVX_VALUES = frozenset({
    "--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index", "--index-url",
    "--extra-index-url", "--default-index", "--constraints", "-c", "--overrides", "--find-links", "-f",
})


def _uvx(words: tuple[str, ...], start: int, label: str = "uvx") -> list[Problem]:
    plain, values = _parse(words, start + 1, _UVX_VALUES)
    chosen = values.get("--from", []) or plain[:1]
    return [(i, f"runs '{w}' through {label} without an exact version") for i, w in chosen if not _uv_pinned(w)]


def _uv_pinned(spec: str) -> bool:
    if "@" in spec and not spec.startswith("@"):
        return not floating(spec.rsplit("@", 1)[1])
    return pip_pinned(spec)


def _uv(words: tuple[str, ...], start: int) -> list[Problem]:
    """``uv tool run pkg`` and ``uv pip install pkg``."""
    if words[start + 1 : start + 3] == ("tool", "run"):
        return _uvx(words, start + 2, label="uv tool run")
    if words[start + 1 : start + 2] == ("pip",):
        return _pip(words, start + 1)
    return []


def _pipx(words: tuple[str, ...], start: int) -> list[Problem]:
    plain, values = _parse(words, start + 1, frozenset({"--spec", "--python", "--index-url", "--pip-args"}))
    if not plain or plain[0][1] != "run":
        return []
    chosen = values.get("--spec", []) or plain[1:2]
    return [(i, f"runs '{w}' through pipx without an exact version") for i, w in chosen if not pip_pinned(w)]


_DOCKER_VALUES = frozenset({
    "-e", "--env", "-v", "--volume", "--name", "-p", "--publish", "--network", "--net", "-u", "--user", "-w",
    "--workdir", "--entrypoint", "--mount", "--env-file", "-l", "--label", "--label-file", "--platform",
    "--cpus", "-m", "--memory", "--memory-swap", "--pull", "--add-host", "--cap-add", "--cap-drop",
    "--security-opt", "--device", "--tmpfs", "--ulimit", "--hostname", "-h", "--pids-limit", "--shm-size",
    "--log-driver", "--log-opt", "--restart", "--dns", "--ipc", "--pid", "--userns", "--gpus", "--runtime",
    "--cidfile", "--stop-signal", "--stop-timeout", "--group-add", "--ip", "--ip6", "--expose", "--link",
    "--volumes-from", "--uts", "--cgroupns", "--sysctl", "-a", "--attach", "-c", "--cpu-shares",
    "--cpuset-cpus", "--health-cmd", "--network-alias", "--storage-opt", "--isolation",
})


def _docker(words: tuple[str, ...], start: int) -> list[Problem]:
    """docker / podman ``run`` or ``create`` (also ``container run``): the first plain word after it is the image."""
    plain, _ = _parse(words, start + 1, _DOCKER_VALUES)
    if plain[:1] and plain[0][1] == "container":
        plain = plain[1:]
    if not plain or plain[0][1] not in ("run", "create"):
        return []
    return [(i, f"runs image '{w}' through {program_name(words[start])} without an @sha256 digest") for i, w in plain[1:2] if "@sha256:" not in w]


_DETECTORS: dict[str, Detector] = {
    "npx": _npx, "bunx": _npx, "npm": _npm_like, "pnpm": _npm_like, "yarn": _npm_like,
    "pip": _pip, "pip3": _pip, "python": _python, "python3": _python,
    "uvx": _uvx, "uv": _uv, "pipx": _pipx, "docker": _docker, "podman": _docker,
}


RULE = Rule(
    id="SP002",
    slug="unpinned-package",
    severity="high",
    summary="A package is installed or run without an exact version",
    check=check,
    doc=__doc__ or "",
)
