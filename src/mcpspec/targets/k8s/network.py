"""Where a server's pods may connect, and who may connect to them.

The namespace denies every ingress and egress (``default-deny``); each policy
here opens one path. A server with an allowlist reaches only its own egress
proxy (squid, configured by the shared generator ``targets.egress``), and
resolves names through kube-dns to find it; with ``--egress cilium`` a
CiliumNetworkPolicy allows the listed names (``toFQDNs``) instead, and asks
kube-dns only about them. Address entries are ipBlocks with the metadata and
special-purpose ranges inside them carved out (``mcpspec.addresses``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcpspec.addresses import NEVER_NETWORKS, REFUSED_NETWORKS, IPNetwork
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.values import Destination
from mcpspec.targets.egress import EgressPlan
from mcpspec.targets.k8s.names import AGENT_LABEL, PROXY_PORT, ROLE_LABEL, SERVER_LABEL, egress_name, labels, metadata, server_labels

KUBE_DNS: dict[str, Any] = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
EVERYWHERE = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


def denied_networks(egress: EgressPlan) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(d.host, strict=False) for d in egress.deny if d.kind == "cidr" and d.port is None)


@dataclass(frozen=True, slots=True)
class Route:
    """How one server's traffic leaves: through its proxy, by name through Cilium, to
    addresses only, or (default allow without a proxy) to every public address."""

    proxy: bool = False
    cilium: bool = False
    open_direct: bool = False

    @property
    def dns(self) -> bool:
        return self.proxy or self.open_direct  # Cilium's own policy carries its DNS rule


def route(egress: EgressPlan, proxy_image: str | None, cilium: bool) -> Route:
    if egress.mode == "none":
        return Route()
    names = any(d.kind != "cidr" for d in egress.allow)
    if cilium and egress.default == "deny":
        return Route(cilium=names)
    if egress.mode == "proxy" and not cilium:
        return Route(proxy=proxy_image is not None)
    return Route(open_direct=egress.default == "allow")


def default_deny(plan: Plan) -> dict[str, Any]:
    return _policy("default-deny", labels(plan, "default-deny", "network-policy"), ("defaults",), {}, ["Ingress", "Egress"])


def _policy(name: str, labels_: dict[str, str], path: Any, pods: dict[str, str], types: list[str], ingress: list[Any] | None = None, egress: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": pods} if pods else {}, "policyTypes": types}
    if ingress:
        spec["ingress"] = ingress
    if egress:
        spec["egress"] = egress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(name, labels_, path), "spec": spec}


def ip_blocks(destination: Destination, denied: tuple[IPNetwork, ...] = ()) -> list[dict[str, Any]]:
    """The ipBlock of one address entry: ranges no spec may reach and the spec's denied ones carved
    out, and the other special-purpose ranges too unless the entry lies inside one (then it names it
    on purpose). Empty when the whole entry is refused."""
    carved = _carve(destination.host, denied)
    if carved is None:
        return []
    cidr, exceptions = carved
    block: dict[str, Any] = {"cidr": cidr}
    if exceptions:
        block["except"] = list(exceptions)
    return [block]


@functools.lru_cache(maxsize=1024)
def _carve(host: str, denied: tuple[IPNetwork, ...]) -> tuple[str, tuple[str, ...]] | None:
    """(the entry's network, the ranges carved out of it), None when it is refused: a function of the
    entry and the denied ranges only (the others are constants), computed once for the servers that share them."""
    network = ipaddress.ip_network(host, strict=False)
    if any(_within(network, never) for never in (*NEVER_NETWORKS, *denied)):
        return None
    refused = () if any(_within(network, r) for r in REFUSED_NETWORKS) else REFUSED_NETWORKS
    carved = sorted({str(n) for n in (*NEVER_NETWORKS, *refused, *denied) if _within(n, network) and n != network})
    return str(network), tuple(carved)


def _within(inner: IPNetwork, outer: IPNetwork) -> bool:
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _ports(port: int | None) -> list[dict[str, Any]]:
    return [] if port is None else [{"protocol": "TCP", "port": port}]


def _to(peers: list[dict[str, Any]], port: int | None) -> dict[str, Any]:
    rule: dict[str, Any] = {"to": peers}
    if port is not None:
        rule["ports"] = _ports(port)
    return rule


def server_policy(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan, route: Route, listen_port: int | None) -> dict[str, Any] | None:
    """The paths one server's pods may take beyond the namespace's default deny (None: none)."""
    proxied, dns, open_direct = route.proxy, route.dns, route.open_direct
    rules: list[dict[str, Any]] = []
    if dns:
        rules.append({"to": [KUBE_DNS], "ports": DNS_PORTS})
    if proxied:
        rules.append({"to": [{"podSelector": {"matchLabels": {SERVER_LABEL: sandbox.name, ROLE_LABEL: "egress-proxy"}}}], "ports": _ports(PROXY_PORT)})
    denied = denied_networks(egress)
    for destination in egress.allow:
        if destination.kind == "cidr":
            blocks = ip_blocks(destination, denied)
            if blocks:
                rules.append(_to([{"ipBlock": b} for b in blocks], destination.port))
    if open_direct:
        rules.append({"to": [{"ipBlock": b} for n in EVERYWHERE for b in ip_blocks(Destination("cidr", str(n), None, str(n)), denied)]})
    ingress: list[dict[str, Any]] = []
    if listen_port is not None and sandbox.agents:
        agents = {"matchExpressions": [{"key": AGENT_LABEL, "operator": "In", "values": sorted(sandbox.agents)}]}
        ingress.append({"from": [{"podSelector": agents}], "ports": _ports(listen_port)})
    if not rules and not ingress:
        return None
    types = [t for t, r in (("Ingress", ingress), ("Egress", rules)) if r]
    return _policy(sandbox.name, server_labels(plan, sandbox, "network-policy"), sandbox.path, {SERVER_LABEL: sandbox.name, ROLE_LABEL: "server"}, types, ingress, rules)


def proxy_policy(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan) -> dict[str, Any]:
    """The egress proxy: reached from its server only; it reaches kube-dns and any address but
    the ranges no spec may reach and the special-purpose ones (squid checks again after resolving)."""
    name = egress_name(sandbox.name)
    ports = sorted({d.port for d in egress.allow if d.port is not None}) if egress.default == "deny" and all(d.port is not None for d in egress.allow) else []
    out: list[dict[str, Any]] = [{"to": [KUBE_DNS], "ports": DNS_PORTS}]
    everywhere = [{"ipBlock": b} for n in EVERYWHERE for b in ip_blocks(Destination("cidr", str(n), None, str(n)))]
    out.append({"to": everywhere, **({"ports": [{"protocol": "TCP", "port": p} for p in ports]} if ports else {})})
    for destination in egress.allow:
        if destination.kind == "cidr":
            blocks = ip_blocks(destination)
            if blocks:
                out.append(_to([{"ipBlock": b} for b in blocks], destination.port))
    ingress = [{"from": [{"podSelector": {"matchLabels": {SERVER_LABEL: sandbox.name, ROLE_LABEL: "server"}}}], "ports": _ports(PROXY_PORT)}]
    return _policy(name, labels(plan, name, "network-policy", sandbox.name), (*sandbox.path, "egress"), {SERVER_LABEL: sandbox.name, ROLE_LABEL: "egress-proxy"}, ["Ingress", "Egress"], ingress, out)


def cilium_policy(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan) -> dict[str, Any] | None:
    """toFQDNs for the listed names, DNS through kube-dns for those names only, and the
    ranges no spec may reach (and the special-purpose ones it does not list) denied."""
    names = [d for d in egress.allow if d.kind != "cidr"]
    if not names:
        return None
    fqdns = [_fqdn(d) for d in names]
    rules: list[dict[str, Any]] = [
        {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}],
         "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}], "rules": {"dns": _unique(fqdns)}}]},
    ]
    for destination, fqdn in zip(names, fqdns, strict=True):
        rule: dict[str, Any] = {"toFQDNs": [fqdn]}
        if destination.port is not None:
            rule["toPorts"] = [{"ports": [{"port": str(destination.port), "protocol": "TCP"}]}]
        rules.append(rule)
    named = [ipaddress.ip_network(d.host, strict=False) for d in egress.allow if d.kind == "cidr"]
    denied: list[dict[str, Any]] = [{"cidr": str(n)} for n in (*NEVER_NETWORKS, *denied_networks(egress))]
    for refused in REFUSED_NETWORKS:  # a name may resolve anywhere: refuse these ranges but the parts the spec lists
        if refused in named:
            continue
        inside = sorted({str(x) for x in named if _within(x, refused)})
        denied.append({"cidr": str(refused), **({"except": inside} if inside else {})})
    name = f"{sandbox.name}-fqdn"
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": metadata(name, server_labels(plan, sandbox, "network-policy"), (*sandbox.path, "egress", "allow")),
        "spec": {
            "endpointSelector": {"matchLabels": {SERVER_LABEL: sandbox.name, ROLE_LABEL: "server"}},
            "egress": rules,
            "egressDeny": [{"toCIDRSet": denied}],
        },
    }


def _fqdn(destination: Destination) -> dict[str, str]:
    if destination.kind == "wildcard":
        return {"matchPattern": destination.host}
    return {"matchName": destination.host}


def _unique(items: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
