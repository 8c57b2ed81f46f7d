"""
## What it does
Flags ambient cloud credentials reaching a server: an `env.inherit` list or
an `env.set` key naming a cloud credential variable (`AWS_*`, `AZURE_*`,
`GOOGLE_APPLICATION_CREDENTIALS`, `CLOUDSDK_*`, `KUBECONFIG`,
`IDENTITY_ENDPOINT`, `ARM_*`, `OCI_*`, `DIGITALOCEAN_*`; regions, zones and
project ids excepted), a long-lived secret bound to such a variable or read
from a cloud credentials file, or a mount of a cloud CLI's credential
directory (`~/.aws`, `~/.config/gcloud`, `~/.azure`, `~/.kube`, ...).
A secret that declares a `ttl` (a short-lived, issued credential) is not
ambient and is not reported.

## Why is this risky
The credentials in a developer's shell and cloud CLI directories are usually
the developer's own: broad, long-lived, often administrator. A server given
them can do anything its owner can in every account and cluster those files
reach, and a prompt-injected model steering it turns that into lateral
movement or data theft. A server that needs cloud access should get a
credential issued for it: scoped to what it does, short-lived, revocable.

## Example
```yaml
version: 1
project: demo
servers:
  deployer:
    command: [deployer-mcp]
    env:
      inherit: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN]
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  deploy-role:
    provider: vault
    ref: aws/creds/preview-deployer
    description: STS credentials of a role that can only update the preview stack.
    scopes: [cloudformation:preview-stack]
    ttl: 15m
servers:
  deployer:
    command: [deployer-mcp, --credentials-file, /run/secrets/aws]
    env:
      set: {AWS_REGION: eu-west-1}
    secrets:
      - {use: deploy-role, as: {file: /run/secrets/aws}}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP02 Privilege Escalation via Scope Creep
- CWE-522 Insufficiently Protected Credentials, CWE-272 Least Privilege Violation
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan, SecretGrant
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import CLOUD_ENV_NAME, host_mounts, launched, overlapping
from mcpspec.rules.grouping import grouped, listing
from mcpspec.rules.secrets._common import NOT_A_CREDENTIAL, inherited_names, set_names, whose

CLOUD_CREDENTIAL_PATHS = (
    "~/.aws", "~/.config/gcloud", "~/.boto", "~/.azure", "~/.kube", "~/.oci", "~/.aliyun", "~/.config/doctl",
    "/etc/kubernetes", "/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io",
)


def cloud_variable(name: str) -> bool:
    return CLOUD_ENV_NAME.match(name) is not None and NOT_A_CREDENTIAL.search(name) is None


def cloud_paths(path: str) -> list[str]:
    return [known for known, _ in overlapping(path, CLOUD_CREDENTIAL_PATHS)]


def _env(plan: Plan) -> Iterator[Finding]:
    passed = grouped(((path, name), server) for path, name, server in [*inherited_names(plan), *set_names(plan)] if cloud_variable(name))
    for (path, name), group in passed.items():
        how = "env.inherit passes" if "inherit" in path else "env.set sets"
        yield Finding(path=path, message=f"{how} {name}, an ambient cloud credential, for {whose(path, group)}")


def _grant(server: EffectiveSandbox, grant: SecretGrant) -> Finding | None:
    if grant.ttl is not None:
        return None
    related = (Related(grant.secret_path, f"secret {grant.name!r}, with no ttl"),)
    if grant.env is not None and cloud_variable(grant.env):
        message = f"server {server.name!r} gets long-lived secret {grant.name!r} as {grant.env}, a cloud credential variable"
        return Finding(path=(*grant.path, "as", "env"), message=message, related=related)
    for source in grant.every_source():  # whichever target reads it
        if source.provider == "file" and cloud_paths(source.ref):
            message = f"server {server.name!r} gets secret {grant.name!r}, read from cloud credentials {source.ref}"
            return Finding(path=(*grant.path, "use"), message=message, related=related)
    return None


def check(plan: Plan) -> Iterator[Finding]:
    yield from _env(plan)
    for server in launched(plan):
        for grant in server.secrets:
            finding = _grant(server, grant)
            if finding is not None:
                yield finding
        for mount in host_mounts(server):
            known = cloud_paths(mount.location)
            if known:
                message = f"server {server.name!r} mounts {mount.location}, reaching cloud credentials in {listing(known)}"
                yield Finding(path=(*mount.path, "from"), message=message)


RULE = Rule(
    id="SE005",
    slug="cloud-credentials-passed",
    severity="high",
    summary="Ambient cloud credentials reach a server",
    check=check,
    doc=__doc__ or "",
)
