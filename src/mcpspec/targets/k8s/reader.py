"""Read back what a k8s build grants each server, from its manifests alone.

Each server's container is found in its Deployment or Job (pods labelled
``mcpspec.dev/role: server``), or in an agent's PodTemplate (``placement: agent``:
the pod is the agent's, so its network is read as open). Its egress is what the
NetworkPolicies and CiliumNetworkPolicies that select its pod let through, with
the proxy's ``<server>.squid.conf`` read by the shared squid reader. What this
reader does not understand it reads as granted.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any

from mcpspec.targets.build import MANIFEST
from mcpspec.targets.grants import ANY, EgressGrant, Endpoint, EndpointKind, Grants, Identity, Limits, Mode, MountGrant, SecretLanding
from mcpspec.targets.k8s.manifest import load
from mcpspec.targets.k8s.names import ROLE_LABEL, SECRET_NAMES, SERVER_LABEL, WORKSPACE_DIR, kubelet_value
from mcpspec.targets.k8s.pod import TIMEOUT
from mcpspec.targets.squid_reader import read_squid

_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T|)$")
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network
_OPEN = EgressGrant("direct", "allow", frozenset({ANY}), host_loopback=True)


def quantity(text: object) -> int | None:
    match = _QUANTITY.match(str(text))
    return int(float(match.group(1)) * _UNITS[match.group(2)]) if match else None


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    """Grants per server, for every server container among ``files`` (name -> text)."""
    docs = [doc for name, text in sorted(files.items()) if name.endswith(".yaml") for doc in load(text)]
    claims = {d["metadata"]["name"]: d["metadata"].get("annotations", {}).get(WORKSPACE_DIR, "") for d in docs if d.get("kind") == "PersistentVolumeClaim"}
    vault = {d["spec"]["target"]["name"]: d for d in docs if d.get("kind") == "ExternalSecret"}
    pids = _pod_pids_limit(files)
    out: dict[str, Grants] = {}
    for doc in docs:
        kind = doc.get("kind")
        if kind in ("Deployment", "Job"):
            template = doc["spec"]["template"]
            pod_labels = template["metadata"].get("labels", {})
            if pod_labels.get(ROLE_LABEL) != "server":
                continue
            server = pod_labels[SERVER_LABEL]
            deadline = doc["spec"].get("activeDeadlineSeconds") if kind == "Job" else None
            egress = _egress(docs, pod_labels, files)
            out[server] = _grants(server, template, claims, vault, egress, deadline, pids)
        elif kind == "PodTemplate":
            template = doc["template"]
            for container in template["spec"]["containers"]:
                out.setdefault(container["name"], _grants(container["name"], template, claims, vault, _OPEN, None, pids, container))
    return out


def _pod_pids_limit(files: Mapping[str, str]) -> int | None:
    """The nodes' podPidsLimit the build was given (--pod-pids-limit, recorded in the build manifest):
    no object of a pod spec limits processes, the kubelet does."""
    manifest = files.get(MANIFEST)
    if manifest is None:
        return None
    given = json.loads(manifest).get("options", {}).get("pod_pids_limit")
    return int(given) if given is not None else None


def _lifetime(deadline: int | None, command: list[str]) -> float | None:
    """A Job's activeDeadlineSeconds, or the seconds of the timeout(1) the container's command runs under."""
    limits = [float(deadline)] if deadline else []
    if tuple(command[: len(TIMEOUT)]) == TIMEOUT and len(command) > len(TIMEOUT) and re.fullmatch(r"[0-9]+s", command[len(TIMEOUT)]):
        limits.append(float(command[len(TIMEOUT)][:-1]))
    return min(limits) if limits else None


def _grants(server: str, template: Mapping[str, Any], claims: Mapping[str, str], vault: Mapping[str, Any], egress: EgressGrant,
            deadline: int | None, pids: int | None, container: Mapping[str, Any] | None = None) -> Grants:
    spec = template["spec"]
    if container is None:
        container = next(c for c in spec["containers"] if c["name"] == server)
    annotations = template.get("metadata", {}).get("annotations", {})
    names: dict[str, str] = json.loads(annotations.get(SECRET_NAMES, annotations.get(f"{SECRET_NAMES}.{server}", "{}")))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts: list[MountGrant] = []
    secrets: list[SecretLanding] = []
    enforced = {"mounts"}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        mode: Mode = "ro" if mount.get("readOnly") else "rw"
        target = mount["mountPath"]
        if "emptyDir" in volume:
            mounts.append(MountGrant(target, "tmpfs", "", mode, quantity(volume["emptyDir"].get("sizeLimit"))))
        elif "persistentVolumeClaim" in volume:
            pvc = volume["persistentVolumeClaim"]
            mode = "ro" if mount.get("readOnly") or pvc.get("readOnly") else "rw"
            mounts.append(MountGrant(target, "workspace", claims.get(pvc["claimName"], pvc["claimName"]), mode))
        elif "projected" in volume or "secret" in volume:
            for source in volume.get("projected", {}).get("sources", []) or [{"secret": volume.get("secret", {})}]:
                secret = source.get("secret", {})
                for item in secret.get("items", []):
                    provider, ref = _secret_source(secret.get("name", secret.get("secretName", "")), item["key"], vault)
                    secrets.append(SecretLanding(names.get(f"file:{target}", secret.get("name", "")), provider, ref, None, target))
        elif "hostPath" in volume:
            mounts.append(MountGrant(target, "host", volume["hostPath"].get("path", "/"), mode))
        else:
            mounts.append(MountGrant(target, "host", "/", mode))
    if not any("hostPath" in v for v in volumes.values()):
        enforced.add("hidden-paths")
    env_set: list[tuple[str, str]] = []
    for entry in container.get("env", []):
        if "value" in entry:
            env_set.append((entry["name"], kubelet_value(str(entry["value"]))))
        elif "secretKeyRef" in entry.get("valueFrom", {}):
            ref = entry["valueFrom"]["secretKeyRef"]
            provider, source = _secret_source(ref["name"], ref["key"], vault)
            secrets.append(SecretLanding(names.get(f"env:{entry['name']}", ref["name"]), provider, source, entry["name"], None))
    enforced.add("env")
    if secrets:
        enforced.add("secrets")
    identity = _identity(spec.get("securityContext", {}), container.get("securityContext", {}))
    if not identity.host_root and not identity.capabilities:
        enforced.add("identity")
    limits_spec = container.get("resources", {}).get("limits", {})
    cpu = limits_spec.get("cpu")
    cpu_percent = None
    if cpu is not None:
        text = str(cpu)
        cpu_percent = int(text[:-1]) / 10 if text.endswith("m") else float(text) * 100
    limits = Limits(memory=quantity(limits_spec["memory"]) if "memory" in limits_spec else None, cpu_percent=cpu_percent,
                    lifetime=_lifetime(deadline, container.get("command", [])), pids=pids)
    for control, value in (("memory", limits.memory), ("cpu", limits.cpu_percent), ("lifetime", limits.lifetime), ("pids", limits.pids)):
        if value:
            enforced.add(control)
    if egress.mode != "direct" or egress.allow != frozenset({ANY}):
        enforced.update({"egress-deny", "listeners"})
        if egress.mode == "proxy":
            enforced.update({"egress-allowlist", "metadata-blocking"})
    return Grants(
        target="k8s", server=server, mounts=tuple(sorted(mounts)), env_set=tuple(env_set), env_inherit=(), env_inherit_all=False,
        secrets=tuple(sorted(secrets)), egress=egress, identity=identity, limits=limits, enforced=frozenset(enforced),
    )


def _secret_source(secret: str, key: str, vault: Mapping[str, Any]) -> tuple[str, str]:
    external = vault.get(secret)
    if external is not None:
        for data in external["spec"].get("data", []):
            if data.get("secretKey") == key:
                remote = data["remoteRef"]
                return "vault", remote["key"] + (f"#{remote['property']}" if "property" in remote else "")
    return "k8s-secret", f"{secret}#{key}"


def _identity(pod: Mapping[str, Any], container: Mapping[str, Any]) -> Identity:
    merged = {**pod, **container}
    uid = merged.get("runAsUser")
    caps = container.get("capabilities", {})
    dropped = "ALL" in caps.get("drop", []) and not caps.get("add")
    privileged = bool(container.get("privileged"))
    host_uid = 0 if uid is None or privileged else int(uid)  # no uid: the image's user, which may be root
    return Identity(uid if uid is None else int(uid), merged.get("runAsGroup"), host_uid,
                    frozenset() if dropped and not privileged else frozenset({"ALL"}), merged.get("allowPrivilegeEscalation") is False)


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if selector.get("matchExpressions"):
        return True  # wide: an expression this reader does not evaluate may select it
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _egress(docs: list[dict[str, Any]], labels: Mapping[str, str], files: Mapping[str, str]) -> EgressGrant:
    restricted = False
    allow: set[Endpoint] = set()
    carved: list[tuple[IPNet, list[IPNet]]] = []  # each ipBlock: its range and what it carves out
    proxies: list[EgressGrant] = []
    deny: set[Endpoint] = set()
    for doc in docs:
        kind = doc.get("kind")
        if kind == "NetworkPolicy" and _selects(doc["spec"].get("podSelector", {}), labels) and "Egress" in doc["spec"].get("policyTypes", []):
            restricted = True
            for rule in doc["spec"].get("egress", []):
                ports = [p.get("port") for p in rule.get("ports", [])] or [None]
                for peer in rule.get("to", []) or [{}]:
                    _peer(peer, ports, docs, files, allow, carved, proxies)
        elif kind == "CiliumNetworkPolicy" and _selects(doc["spec"].get("endpointSelector", {}), labels):
            restricted = True
            for rule in doc["spec"].get("egress", []):
                ports = [int(p["port"]) for tp in rule.get("toPorts", []) for p in tp.get("ports", [])] or [None]
                if "toEndpoints" in rule and ports == [53]:
                    continue  # DNS through kube-dns
                for fqdn in rule.get("toFQDNs", []):
                    name = fqdn.get("matchName") or fqdn.get("matchPattern", "*")
                    kind_: EndpointKind = "wildcard" if name.startswith("*.") else "domain" if "*" not in name else "any"
                    allow.update(Endpoint(kind_, name if kind_ != "any" else "*", p if kind_ != "any" else None) for p in ports)
                if not rule.get("toFQDNs"):
                    allow.add(ANY)
            for rule in doc["spec"].get("egressDeny", []):
                for entry in rule.get("toCIDRSet", []):
                    deny.update(Endpoint("cidr", str(n), None) for n in _minus(ipaddress.ip_network(entry["cidr"]), entry.get("except", [])))
    if not restricted:
        return _OPEN
    deny.update(_refused(carved, allow))
    if proxies:
        squid = proxies[0]
        return EgressGrant("proxy", squid.default, frozenset(allow | set().union(*(p.allow for p in proxies))), frozenset(deny | set(squid.deny)))
    if not allow:
        return EgressGrant("none")
    return EgressGrant("direct", "allow" if ANY in allow else "deny", frozenset(allow), frozenset(deny))


def _refused(blocks: list[tuple[IPNet, list[IPNet]]], allow: set[Endpoint]) -> set[Endpoint]:
    """The carved-out ranges no rule opens: every block that overlaps one carves it out too
    (a rule that opens anything but an ipBlock opens them all)."""
    if any(e.kind != "cidr" for e in allow):
        return set()
    out: set[Endpoint] = set()
    for index, (_cidr, excepts) in enumerate(blocks):
        for carved in excepts:
            # the parts of it that no other block opens (one that carves it out too opens none of it)
            opening = [str(o) for i, (o, o_except) in enumerate(blocks) if i != index and _overlaps(o, carved) and not any(_within(carved, x) for x in o_except)]
            out.update(Endpoint("cidr", str(n), None) for n in _minus(carved, opening))
    return out


def _minus(network: IPNet, excepts: list[str]) -> list[IPNet]:
    """``network`` without the ``excepts`` inside it, as networks."""
    pieces = [network]
    for text in excepts:
        cut = ipaddress.ip_network(text, strict=False)
        pieces = [q for p in pieces for q in ((p.address_exclude(cut) if _within(cut, p) else [p]) if not _within(p, cut) else [])]  # type: ignore[arg-type]
    return pieces


def _overlaps(a: IPNet, b: IPNet) -> bool:
    return a.version == b.version and a.overlaps(b)


def _within(a: IPNet, b: IPNet) -> bool:
    return a.version == b.version and a.subnet_of(b)  # type: ignore[arg-type]


def _peer(peer: Mapping[str, Any], ports: list[Any], docs: list[dict[str, Any]], files: Mapping[str, str],
          allow: set[Endpoint], carved: list[tuple[IPNet, list[IPNet]]], proxies: list[EgressGrant]) -> None:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        cidr = ipaddress.ip_network(block["cidr"], strict=False)
        allow.update(Endpoint("cidr", str(cidr), p) for p in ports)
        carved.append((cidr, [ipaddress.ip_network(e, strict=False) for e in block.get("except", [])]))
        return
    selector = peer.get("podSelector", {}).get("matchLabels", {})
    if peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name") == "kube-system" and selector.get("k8s-app") == "kube-dns":
        return  # DNS
    if selector.get(ROLE_LABEL) == "egress-proxy" and "namespaceSelector" not in peer:
        squid = files.get(f"{selector.get(SERVER_LABEL)}.squid.conf")
        proxies.append(read_squid(squid) if squid is not None else EgressGrant("none"))
        return
    allow.add(ANY)
