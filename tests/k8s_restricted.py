"""The Pod Security Standards ``restricted`` profile (which includes ``baseline``), as a checker.

Written from the Kubernetes documentation (concepts/security/pod-security-standards):
every control of both profiles, with the fields it restricts and the values it allows.
``violations(pod_spec)`` names each rule a pod spec breaks (empty: it is admitted).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"})


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for container in pod.get(field) or []:
            yield f"{field}[{container.get('name')}]", container


def violations(pod: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    psc: Mapping[str, Any] = pod.get("securityContext") or {}
    containers = list(_containers(pod))
    contexts = [(where, c.get("securityContext") or {}) for where, c in containers]
    # --- baseline ---
    if (psc.get("windowsOptions") or {}).get("hostProcess") or any((sc.get("windowsOptions") or {}).get("hostProcess") for _, sc in contexts):
        out.append("HostProcess")
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            out.append(f"host namespaces: {field}")
    for where, sc in contexts:
        if sc.get("privileged"):
            out.append(f"privileged: {where}")
        if sc.get("procMount") not in (None, "Default"):
            out.append(f"/proc mount type: {where}")
    for where, container in containers:
        for port in container.get("ports") or []:
            if port.get("hostPort") not in (None, 0):
                out.append(f"host ports: {where}")
    for volume in pod.get("volumes") or []:
        if "hostPath" in volume:
            out.append(f"hostPath volume {volume['name']}")
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            out.append(f"volume types: {volume['name']} is {sorted(kinds - RESTRICTED_VOLUMES)}")
    for where, sc in [("pod", psc), *contexts]:
        apparmor = (sc.get("appArmorProfile") or {}).get("type")
        if apparmor not in (None, "RuntimeDefault", "Localhost"):
            out.append(f"AppArmor: {where} is {apparmor}")
        selinux = sc.get("seLinuxOptions") or {}
        if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            out.append(f"SELinux: {where}")
        seccomp = (sc.get("seccompProfile") or {}).get("type")
        if seccomp == "Unconfined":
            out.append(f"seccomp: {where} is Unconfined")
    for annotation in ((pod.get("metadata") or {}).get("annotations") or {}):
        if annotation.startswith("container.apparmor.security.beta.kubernetes.io/"):
            out.append("AppArmor annotation")
    for sysctl in psc.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            out.append(f"sysctls: {sysctl.get('name')}")
    # --- restricted ---
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    pod_non_root = psc.get("runAsNonRoot")
    for where, sc in contexts:
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"privilege escalation: {where} must set allowPrivilegeEscalation false")
        non_root = sc.get("runAsNonRoot", pod_non_root)
        if non_root is not True:
            out.append(f"running as non-root: {where}")
        seccomp = (sc.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"seccomp: {where} must be RuntimeDefault or Localhost")
        capabilities = sc.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            out.append(f"capabilities: {where} must drop ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"capabilities: {where} adds {capabilities.get('add')}")
        if sc.get("runAsUser") == 0:
            out.append(f"running as non-root user: {where}")
    if psc.get("runAsUser") == 0:
        out.append("running as non-root user: pod")
    return out
