"""
## What it does
Flags launch commands that download what they run each time the server
starts (`npx -y pkg`, `bunx pkg`, `npm exec pkg`, `pnpm dlx pkg`,
`yarn dlx pkg`, `uvx pkg`, `uv tool run pkg`, `pipx run pkg`, and
`docker run` or `podman run` of an image without an `@sha256:` digest) when
the spec says that cannot or must not happen:

- the server's egress allows no destination at all (`default: deny` and an
  empty `allow`): the download fails and the server never starts;
- `process.package_install.allowed` is false (also the default): fetching
  a package, or an image, at launch is a run-time install the spec forbids.

The message says which of the two applies.

## Why is this risky
A spec is a promise about what runs. A launcher that fetches its code at
start breaks that promise in one of two ways: with egress closed it fails on
the first start (and whoever debugs it tends to open egress wide), and with
installs forbidden the code that runs is whatever the registry serves that
day, never reviewed, fetched by a process the spec said installs nothing.
Install the server ahead of time (in the image, or with the package manager
on the host) and run the installed program.

## Example
```yaml
version: 1
project: demo
servers:
  github:
    command: [npx, -y, "@modelcontextprotocol/server-github@2025.4.8"]
    egress:
      default: deny
```

## Use instead
```yaml
version: 1
project: demo
servers:
  github:
    image: ghcr.io/acme/mcp-github@sha256:4f1c2a9e7b3d5c8f1e2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e
    command: [mcp-server-github]
    egress:
      default: deny
      allow: ["api.github.com:443"]
```

## References
- OWASP MCP Top 10: MCP04 Software Supply Chain Attacks & Dependency Tampering
- CWE-494: Download of Code Without Integrity Check
- npm documentation: `npx` installs missing packages (`--yes` skips the prompt)
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.subprocess._common import program_name, server_segments
from mcpspec.rules.subprocess.unpinned_package import _DOCKER_VALUES, _UVX_VALUES
from mcpspec.rules.subprocess.unpinned_package import _parse as parse_words

# What a download found in a command: index of the word it fetches, what runs it, and whether it is an image.
Download = tuple[int, str, bool]


def _local(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or spec.endswith((".tgz", ".whl"))


def _npx(words: tuple[str, ...], start: int, label: str) -> Download | None:
    plain, values = parse_words(words, start, frozenset({"-p", "--package", "-c", "--call"}))
    chosen = values.get("-p", []) + values.get("--package", []) or plain[:1]
    return next(((i, label, False) for i, word in chosen if not _local(word)), None)


def _detect(words: tuple[str, ...], start: int) -> Download | None:
    program = program_name(words[start])
    rest = words[start + 1 :]
    if program in ("npx", "bunx"):
        return _npx(words, start + 1, program)
    if program in ("npm", "pnpm", "yarn") and rest:
        plain, _ = parse_words(words, start + 1, frozenset({"--prefix", "--registry", "-w", "--workspace", "-C", "--dir"}))
        if plain and (plain[0][1] == "dlx" or (program == "npm" and plain[0][1] in ("exec", "x"))):
            return _npx(words, plain[0][0] + 1, f"{program} {plain[0][1]}")
        return None
    if program == "uvx" or (program == "uv" and rest[:2] == ("tool", "run")):
        first = start + 1 if program == "uvx" else start + 3
        plain, values = parse_words(words, first, _UVX_VALUES)
        chosen = values.get("--from", []) or plain[:1]
        return next(((i, "uvx" if program == "uvx" else "uv tool run", False) for i, w in chosen if not _local(w)), None)
    if program == "pipx":
        plain, values = parse_words(words, start + 1, frozenset({"--spec", "--python", "--index-url", "--pip-args"}))
        if plain and plain[0][1] == "run":
            chosen = values.get("--spec", []) or plain[1:2]
            return next(((i, "pipx run", False) for i, w in chosen if not _local(w)), None)
        return None
    if program in ("docker", "podman"):
        plain, _ = parse_words(words, start + 1, _DOCKER_VALUES)
        if plain[:1] and plain[0][1] == "container":
            plain = plain[1:]
        if plain and plain[0][1] in ("run", "create") and plain[1:2] and "@sha256:" not in plain[1][1]:
            return plain[1][0], f"{program} {plain[0][1]}", True
    return None


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        for segment in server_segments(plan, server):
            start = segment.start
            found = _detect(segment.words, start) if start is not None else None
            if found is None:
                continue
            index, label, image = found
            finding = _finding(server, segment.path(index), segment.words[index], label, image)
            if finding is not None:
                yield finding
                break


def _finding(server: EffectiveSandbox, path: SpecPath, word: str, label: str, image: bool) -> Finding | None:
    reasons: list[str] = []
    related: list[Related] = []
    # An image is pulled by the container engine on the host, outside the server's egress policy.
    if not image and server.egress.default == "deny" and not server.egress.allow:
        reasons.append("its egress allows no destination, so it will fail to start")
        related.append(Related(server.origin("egress.default"), f"{server.name}'s egress is denied with nothing allowed"))
    if not server.process.package_install.allowed:
        written = "process.package_install.allowed" in server.origins
        reasons.append(f"process.package_install.allowed is false{'' if written else ' (the default)'}, which this contradicts")
        related.append(Related(server.origin("process.package_install.allowed"), "run-time installs are not allowed here"))
    if not reasons:
        return None
    what = f"pulls image '{word}'" if image else f"downloads '{word}'"
    return Finding(
        path=path,
        message=f"server '{server.name}' {what} through {label} at start: {'; and '.join(reasons)} (install it ahead of time and run the installed program)",
        related=tuple(related),
    )


RULE = Rule(
    id="SP009",
    slug="downloads-at-start",
    severity="medium",
    summary="A launch command downloads its package at start although egress is closed or run-time installs are not allowed",
    check=check,
    doc=__doc__ or "",
)
