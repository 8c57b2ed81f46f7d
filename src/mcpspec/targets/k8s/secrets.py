"""Where a server's secrets come from in the cluster: a Secret by name, or one that
external-secrets fills from vault. Never a value: the output holds names and keys only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan, SecretGrant
from mcpspec.targets.base import BuildOptions, Gap, Refused
from mcpspec.targets.k8s.names import is_dns_subdomain, is_secret_key, labels, metadata

VAULT_KEY = "value"
EXTERNAL_SECRETS = "external-secrets.io/v1"


@dataclass(frozen=True, slots=True)
class SecretSource:
    """The Secret object and key one grant is read from."""

    secret: str
    key: str


def vault_secret_name(name: str) -> str:
    return f"secret-{name}"


def secret_gaps(sandbox: EffectiveSandbox, options: BuildOptions) -> list[Gap]:
    gaps: list[Gap] = []
    for grant in sandbox.secrets:
        path = (*grant.secret_path, "provider")
        if grant.provider == "vault" and options.secret_store is None:
            gaps.append(Gap("secrets", "none", path, f"secret {grant.name!r}: vault secrets come through an ExternalSecret, which needs the SecretStore: build with --secret-store NAME"))
        elif grant.provider not in ("vault", "k8s-secret"):
            gaps.append(Gap("secrets", "none", path, f"secret {grant.name!r}: a pod reads secrets from Kubernetes Secrets (k8s-secret) or through external-secrets (vault), not from {grant.provider}"))
    return gaps


def sources(sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, SecretSource]:
    """Each bound secret the cluster can provide, by secret name; raises Refused for a reference a name cannot carry."""
    out: dict[str, SecretSource] = {}
    for grant in sandbox.secrets:
        if grant.provider == "k8s-secret":
            name, _, key = grant.ref.partition("#")
            if not is_dns_subdomain(name) or not is_secret_key(key):
                raise Refused("secrets", (*grant.secret_path, "ref"), f"secret {grant.name!r}: a k8s-secret ref is NAME#KEY, a Secret name (lowercase DNS name) and a key of letters, digits, '-', '_' and '.'")
            out[grant.name] = SecretSource(name, key)
        elif grant.provider == "vault" and options.secret_store is not None:
            out[grant.name] = SecretSource(vault_secret_name(grant.name), VAULT_KEY)
    return out


def external_secrets(plan: Plan, built: list[EffectiveSandbox], options: BuildOptions) -> list[dict[str, Any]]:
    """One ExternalSecret per vault secret the built servers use (the store comes from --secret-store)."""
    store = options.secret_store
    if store is None:
        return []
    if not is_dns_subdomain(store):
        raise Refused("secrets", ("secrets",), "--secret-store must be a SecretStore name (a lowercase DNS name)")
    grants = {grant.name: grant for sandbox in built for grant in sandbox.secrets if grant.provider == "vault"}
    return [_external_secret(plan, grants[name], store) for name in sorted(grants)]


def _external_secret(plan: Plan, grant: SecretGrant, store: str) -> dict[str, Any]:
    key, _, field = grant.ref.partition("#")
    remote: dict[str, str] = {"key": key}
    if field:
        remote["property"] = field
    name = vault_secret_name(grant.name)
    return {
        "apiVersion": EXTERNAL_SECRETS,
        "kind": "ExternalSecret",
        "metadata": metadata(name, labels(plan, grant.name, "secret"), grant.secret_path),
        "spec": {
            "refreshInterval": "1h",
            "secretStoreRef": {"name": store, "kind": "SecretStore"},
            "target": {"name": name, "creationPolicy": "Owner"},
            "data": [{"secretKey": VAULT_KEY, "remoteRef": remote}],
        },
    }
