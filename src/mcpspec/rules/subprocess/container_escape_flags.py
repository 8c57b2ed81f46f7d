"""
## What it does
Flags a server whose launch command runs a container engine (`docker run`, `podman run`,
`nerdctl run`) with an option that hands the container a piece of the host: a bind mount of the
engine's socket (`/var/run/docker.sock`, `podman.sock`...), of a credential directory (`~/.aws`,
`~/.ssh`, `~/.kube`, `~/.config/gcloud`...), of `/`, `/etc` or another system directory, or of a
whole home directory (`-v`, `--volume`, `--mount type=bind` or `type=glob`); `--privileged`;
`--cap-add`; `--device`; `--device-cgroup-rule`; `--network host`, `--pid host`, `--ipc host`,
`--userns host`, `--uts host`, or a namespace joined by path (`--network ns:/proc/1/ns/net`);
`--security-opt seccomp=unconfined`, `apparmor=unconfined`, `label=type:spc_t` or `unmask=...`;
`--volumes-from`; a mount whose source climbs with `..` past a path the client fills in
(`${workspaceFolder}/../..`). `${env:HOME}` and `${userHome}` count as home. Flags are read as the engine reads them, written apart or with `=`, short or
long, up to the image name (an option this rule does not know is read both ways: as a switch, and
as taking the next word, so a later release's option cannot hide the flags after it), past the
engine's own options whatever they are (`nerdctl --namespace
k8s.io run`); a `--mount` value as one CSV record whose keys and type are in any case.

## Why is this risky
These options are how a client config usually starts a server "in Docker", and each undoes the
container: the engine's socket lets the server start a privileged container with `/` mounted, a
credential directory gives it the keys to your cloud or your servers, host namespaces let it see
and signal your processes or reach every port on loopback, and `--privileged` or an added
capability opens the kernel interfaces a container is kept from. The spec's own sandbox does not
undo them: the options are in the command the sandbox runs.

## Example
```yaml
version: 1
project: demo
servers:
  github:
    image: ghcr.io/github/github-mcp-server@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [docker, run, -i, --rm, -v, "/var/run/docker.sock:/var/run/docker.sock", --network=host, ghcr.io/github/github-mcp-server]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  github:
    image: ghcr.io/github/github-mcp-server@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [github-mcp-server, stdio, --read-only]
```

## References
- Docker documentation, "Docker Engine security" (the daemon's attack surface; `--privileged`, capabilities)
- OWASP Docker Security Cheat Sheet: rule 1 (do not expose the Docker daemon socket), rule 3 (limit capabilities), rule 6 (no host namespaces)
- CWE-250: Execution with Unnecessary Privileges; CWE-668: Exposure of Resource to Wrong Sphere
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.dockerargs import dangerous, flag_text
from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.subprocess._common import server_segments


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        for segment in server_segments(plan, server):
            if segment.start is None:
                continue
            words = segment.words[segment.start :]
            for option, why in dangerous(words):
                yield Finding(path=segment.path(segment.start + option.index), message=f"server '{server.name}' runs its container with {flag_text(words, option)}: {why}")


RULE = Rule(
    id="SP010",
    slug="container-escape-flag",
    severity="critical",
    summary="A server's docker or podman run command hands the container a piece of the host",
    check=check,
    doc=__doc__ or "",
)
