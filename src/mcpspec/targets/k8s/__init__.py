"""The Kubernetes target: a kustomization of one namespace with Pod Security ``restricted``.

Per dedicated server: a ServiceAccount without a token, a Deployment (long-lived,
per-session) or a Job (per-task) whose pod carries the restricted settings, a
Service when it listens (a stdio server listens through the stdio-to-HTTP bridge),
its network policies and, for an allowlist through the proxy, its own squid
Deployment, Service and ConfigMap. A server with ``placement: agent`` is a container
of a PodTemplate per agent, to merge into the agent's pod. Everything is built as
data and dumped with PyYAML (``manifest``); nothing is templated as text.

Modules: ``names`` (names, labels, the kubelet's ``$(...)`` escaping), ``pod``
(container, security contexts, volumes, secrets), ``secrets`` (Secrets by name,
ExternalSecrets for vault), ``network`` (NetworkPolicy, CiliumNetworkPolicy),
``workload`` (one server's objects), ``project`` (the shared files), ``gaps`` and
``reader`` (what built manifests grant, read back).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides
from mcpspec.targets.k8s.gaps import server_gaps
from mcpspec.targets.k8s.manifest import dump
from mcpspec.targets.k8s.pod import BRIDGE
from mcpspec.targets.k8s.project import project_files
from mcpspec.targets.k8s.seccomp import RUNTIME_DEFAULT, profile_file, profile_path
from mcpspec.targets.k8s.workload import container_parts, server_objects

__all__ = ["CAPABILITIES", "TARGET", "USAGE", "K8sTarget"]

_REAL = "tests/test_target_k8s_real.py::"
_SECCOMP = "tests/test_seccomp_k8s.py::"
_NOT_HERE = "; no test here runs a cluster that enforces it (podman kube play does not apply NetworkPolicy)"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "a workspace dir is a PersistentVolumeClaim (ws-<dir>) mounted readOnly where the mount is ro; a tmpfs dir is a memory emptyDir with its size as sizeLimit; host paths are refused (never hostPath)", (_REAL + "test_mounts_are_as_declared",)),
    "hidden-paths": Capability("full", "no hostPath volume: the container sees its image, the declared volumes, a 64 MiB /tmp emptyDir and the files the kubelet adds (/etc/hosts, /etc/hostname, /etc/resolv.conf); no service-account token is mounted", (_REAL + "test_nothing_of_the_host_is_visible",)),
    "identity": Capability("full", "pod and container securityContext: runAsNonRoot, a fixed non-zero runAsUser and runAsGroup (0 becomes 65532), allowPrivilegeEscalation false, capabilities drop ALL, a seccomp profile (see syscall filter); the namespace enforces Pod Security restricted", (_REAL + "test_the_pod_runs_non_root_without_capabilities_on_a_read_only_root", "tests/test_target_k8s.py::test_every_pod_meets_the_restricted_profile")),
    "env": Capability("full", "only env.set, the proxy variables and the secrets given as.env, as container env (every $ doubled, so the kubelet expands nothing), plus what the image's ENV sets and the kubelet adds (HOSTNAME, KUBERNETES_SERVICE_*); service links are off", (_REAL + "test_only_the_declared_environment_is_set",)),
    "secrets": Capability("partial", "k8s-secret refs (NAME#KEY) as secretKeyRef env or a projected Secret volume (subPath, mode 0440) at as.file; vault through an external-secrets ExternalSecret from the SecretStore given by --secret-store; env, file and systemd-credential secrets are not supported; no test here runs a Secret"),
    "egress-deny": Capability("partial", "NetworkPolicy default-deny of ingress and egress for the namespace; a server without egress gets no egress rule, not even DNS" + _NOT_HERE),
    "egress-allowlist": Capability("partial", "the server's pods reach only kube-dns and their own squid Deployment (the shared allowlist generator, ConfigMap squid.conf), which allows only the listed names and ports; DNS through kube-dns stays open to the server, which can carry data out in queries; --egress cilium: a CiliumNetworkPolicy toFQDNs and a DNS rule limited to the listed names instead" + _NOT_HERE),
    "metadata-blocking": Capability("partial", "squid refuses metadata and special-purpose addresses after resolution; the proxy's and every address entry's ipBlock carve them out (mcpspec.addresses); with --egress cilium an egressDeny of those ranges" + _NOT_HERE),
    "listeners": Capability("partial", "ingress is denied but from the pods of the agents that list the server (label mcpspec.dev/agent), to its MCP port" + _NOT_HERE),
    "memory": Capability("partial", "resources.limits.memory (and the same request); the kubelet enforces it; not attacked here"),
    "pids": Capability("none", "a pod spec has no process limit: only the nodes' kubelet (podPidsLimit, --pod-max-pids) bounds it; build with --pod-pids-limit N (the nodes' podPidsLimit): a server whose runtime.pids is at least N is then partial, one that asks for fewer stays none"),
    "cpu": Capability("partial", "resources.limits.cpu of cpus (and the same request); not measured here"),
    "lifetime": Capability("partial", "per-task: a Job with activeDeadlineSeconds of max_lifetime and ttlSecondsAfterFinished; a Deployment (long-lived, per-session) or a container in the agent's pod runs its command under timeout(1), which stops it at max_lifetime, and the kubelet starts it afresh in the same pod; not run here"),
    "syscall-filter": Capability("partial", RUNTIME_DEFAULT, (_SECCOMP + "test_the_localhost_profile_holds_in_the_generated_pod", _SECCOMP + "test_manifests_with_localhost_profiles_are_valid_and_restricted")),
    "idle-timeout": Capability("none", "Kubernetes cannot tell an idle MCP session from a slow one; the client or an orchestrator must stop idle pods"),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("none", "the image decides which programs exist; command allow and deny lists are not enforced"),
    "workspace-lifecycle": Capability("partial", "workspace dirs are PersistentVolumeClaims of the namespace: one namespace per run (kustomize namespace:) gives each run its own, deleted with it; artifacts are not copied out"),
    "audit-log": Capability("none", "no audit line: the container's output goes to the cluster's log collection (kubectl logs); squid logs each destination to its stdout"),
    "image": Capability("partial", "the pod runs servers.<name>.image as written: a digest pins it, a tag does not (lint SP001)"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a pod does not see: `mcpspec run` enforces them, in front of the server's bwrap launcher"),
}

USAGE = f"""\
The build writes a kustomization for one namespace, `mcp-<project>`:

- `kustomization.yaml`: the resources below and a ConfigMap generator for each proxy's `squid.conf`;
- `namespace.yaml`: the Namespace, labelled for Pod Security `restricted` (enforce, audit, warn),
  and the `default-deny` NetworkPolicy of every ingress and egress;
- `workspace.yaml`: a PersistentVolumeClaim `ws-<dir>` per workspace dir the servers mount
  (ReadWriteOnce, 1Gi: patch the size and storage class in an overlay);
- `secrets.yaml`: an ExternalSecret per vault secret (build with `--secret-store NAME`);
- `<server>.yaml` per dedicated server: ServiceAccount, Deployment (long-lived, per-session) or
  Job (per-task), Service, NetworkPolicy, and with an allowlist its egress proxy
  (`<server>-egress`: ServiceAccount, Deployment, Service, NetworkPolicy), configured by
  `<server>.squid.conf`; with `--egress cilium` a CiliumNetworkPolicy (`<server>-fqdn`) instead;
- `agent-<agent>.yaml` per agent with `placement: agent` servers: a PodTemplate holding those
  servers' containers and volumes, to merge into the agent's own pod.

```sh
mcpspec build mcp-sandbox.yaml --target k8s --out build/k8s \\
  --proxy-image REGISTRY/squid@sha256:... --secret-store vault
kubectl apply -k build/k8s
```

Build inputs that are not in the spec: `--proxy-image` (an image pinned by digest holding squid 5
or newer on PATH, run as uid 65532), `--secret-store` (the external-secrets SecretStore vault
secrets come from), `--egress proxy|cilium` and `--pod-pids-limit N` (the podPidsLimit the
kubelets of the nodes these pods run on enforce). Without `--proxy-image` a server with an
allowlist gets no egress at all and the build reports TG001; without `--secret-store` a vault
secret is TG001; without `--pod-pids-limit` a server with `runtime.pids` is TG001 (a pod spec
has no process limit), with it the process limit is partial (TG002: the files cannot check the
nodes) for a server whose `runtime.pids` is at least N and stays TG001 for one that asks for
fewer. The committed examples are built with `--proxy-image localhost/mcpspec-egress@sha256:<64
zeros> --secret-store vault-example --pod-pids-limit 64`.

Syscall filter: with `--seccomp-localhost DIR` (a directory under the kubelet's seccomp root,
`/var/lib/kubelet/seccomp` by default) the build writes `seccomp/<server>.json`, the project's
syscall policy (docs/seccomp.md) as an OCI seccomp profile, and each server's container asks for
`seccompProfile: {{type: Localhost, localhostProfile: DIR/<server>.json}}`. Copy the files to
`<seccomp root>/DIR/` on every node before applying (a container whose profile is missing does
not start). Without the option the containers keep `RuntimeDefault` and the build reports what
that leaves open (TG002).

Per run: put each run in a namespace of its own (an overlay with `namespace: <run>`); its claims
and Jobs go with it. The agent's pods must carry the label `mcpspec.dev/agent: <agent>` to
reach the servers the agent lists (`http://<server>:<port>/mcp`, the stdio servers at
`http://<server>:8080/mcp` through the bridge).

Images: each server's `image` must hold its command; a stdio server's image must also hold the
stdio-to-Streamable-HTTP bridge `{BRIDGE[0]}` {BRIDGE[1]} (PyPI) on PATH: the pod runs
`{BRIDGE[0]} --host 0.0.0.0 --port 8080 --pass-environment -- <command>` (in an agent's pod,
`--host 127.0.0.1` and a port of its own). An HTTP server must listen on the pod's address, not
only on 127.0.0.1. The container runs with a read-only root and a 64 MiB `/tmp`. A server with a
max_lifetime that is not a per-task Job runs under coreutils' `timeout`, which its image must hold.

What is not enforced by these files: NetworkPolicy needs a CNI that implements it (Calico,
Cilium...); the tests here validate every manifest against the Kubernetes schemas and the
restricted profile and run the pod templates with `podman kube play` (identity, capabilities,
read-only root, mounts, environment), which does not apply NetworkPolicy, Jobs' deadlines or
Secrets from external-secrets. A dedicated stdio server's Deployment runs there too, behind the
pinned bridge installed from PyPI into its image: the MCP SDK's streamable HTTP client calls its
tools through the bridge's port (forwarded by the test; podman runs no kubelet probes without
systemd as PID 1, and the Service is not applied). A pod spec has no process limit: set the kubelet's podPidsLimit
(`--pod-max-pids`) on the nodes, and say so with `--pod-pids-limit`.
"""


class K8sTarget:
    name = "k8s"
    description = "a Kubernetes kustomization: one namespace with Pod Security restricted, default-deny NetworkPolicy, a Deployment or Job per server and an egress proxy per allowlist"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset({"proxy_image", "egress", "secret_store", "pod_pids_limit", "seccomp_localhost"})

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        return server_gaps(plan, sandbox, options)

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        files: dict[str, str] = {}
        if options.seccomp_localhost is not None:
            files[profile_path(sandbox)] = profile_file(sandbox)
        if sandbox.placement == "agent":
            container_parts(plan, sandbox, options)  # refuses what it cannot write; the agent's PodTemplate holds it
            return Emitted(files)
        objects, squid = server_objects(plan, sandbox, options)
        files[f"{sandbox.name}.yaml"] = dump(plan, f"the objects of server {sandbox.name}", objects)
        if squid is not None:
            files[f"{sandbox.name}.squid.conf"] = squid
        return Emitted(files)

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        return project_files(plan, built, options)


TARGET = K8sTarget()
