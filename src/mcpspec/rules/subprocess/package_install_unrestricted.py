"""
## What it does
Flags `process.package_install.allowed: true` when installs are not held to known sources: no
`registries` listed, or `lockfile: optional`. Each problem is one finding, at its own key.

## Why is this risky
A server that may install packages at run time installs what the model asks for, by name. A
prompt injection, a typo or a dependency-confusion name then pulls attacker code from any index, and
install scripts (`setup.py`, npm `postinstall`) run at once with the sandbox's mounts, secrets and
network. Naming the registries bounds where code can come from; requiring a lockfile (with hashes)
bounds which code, so a new malicious release is not picked up silently.

## Example
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process:
      allow: [python]
      package_install: {allowed: true, lockfile: optional}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process:
      allow: [python]
      package_install: {allowed: true, registries: [pypi], lockfile: required}
```

## References
- OWASP MCP Top 10: MCP04 Software Supply Chain Attacks & Dependency Tampering
- OWASP Top 10 for LLM Applications: LLM03 Supply Chain
- CWE-494: Download of Code Without Integrity Check; CWE-427: Uncontrolled Search Path Element (dependency confusion)
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import grouped, in_full, section_of, who


def check(plan: Plan) -> Iterator[Finding]:
    problems = grouped((place, server) for server in launched(plan) for place in _problems(server))
    for (path, problem), group in problems.items():
        yield Finding(path=path, message=f"package_install lets {who(group, in_full)} install packages {problem}")


def _problems(server: EffectiveSandbox) -> list[tuple[SpecPath, str]]:
    """(where, what) for each way the server's allowed package installs are unrestricted."""
    install = server.process.package_install
    if not install.allowed:
        return []
    found: list[tuple[SpecPath, str]] = []
    if not install.registries:
        found.append((_registries_path(server), "from any registry (no 'registries' listed)"))
    if install.lockfile == "optional":
        found.append((server.origin("process.package_install.lockfile"), "without a lockfile (lockfile: optional)"))
    return found


def _registries_path(server: EffectiveSandbox) -> SpecPath:
    """Where 'registries' is written, or where it belongs: beside the 'allowed: true' that makes it matter."""
    if "process.package_install.registries" in server.origins:
        return server.origin("process.package_install.registries")
    return (*section_of(server, "process.package_install.allowed"), "registries")


RULE = Rule(
    id="SP006",
    slug="package-install-unrestricted",
    severity="high",
    summary="Run-time package installs are not limited to named registries and a lockfile",
    check=check,
    doc=__doc__ or "",
)
