"""The bubblewrap target: one launcher script per server, usable directly as an
MCP client's stdio command, plus a squid allowlist for servers with egress.

The launcher is a generated head (quoted assignments and a ``declare_sandbox``
function that lists mounts, secrets and environment) followed by a constant
runtime (``runtime.sh``) that builds the bwrap command line, starts and stops
the egress proxy, enforces limits and writes the audit line.
"""

from __future__ import annotations

import math
from importlib import resources

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOutput, Capability, Gap
from mcpspec.targets.common import Overrides, compact_json, header, header_text, matrix_gaps
from mcpspec.targets.egress import EgressPlan, egress_plan, squid_config
from mcpspec.targets.escape import Unrepresentable, sh, sh_words

USAGE = """
## Running the output

Each server gets `<server>.sh`, a bash launcher to use as the server's stdio command in
the MCP client's config, for example `{"command": "/opt/mcp/build/bwrap/repo.sh",
"env": {"MCPSPEC_AGENT": "coder"}}`. A server with an egress allowlist also gets
`<server>.squid.conf`, which its launcher reads from the same directory.

The host needs bubblewrap 0.8 or newer with user namespaces enabled, util-linux
(`setpriv`, `setsid`) and, for allowlisted egress, socat and squid
(Debian: `apt-get install bubblewrap socat squid`).

What the launcher reads from its environment:

| variable | meaning |
|---|---|
| `MCPSPEC_AGENT` | the agent this run serves (default: the server's only agent) |
| `MCPSPEC_RUN_ID` | the run id, `[A-Za-z0-9][A-Za-z0-9._-]{0,63}` (default: a UTC timestamp and the pid) |
| the secrets' `env` refs, `HOME`, `CREDENTIALS_DIRECTORY` | where secrets and `~/` mounts are read at launch |
| `MCPSPEC_EGRESS_HOSTS_FILE` | a hosts file for the proxy's name resolution (pinning; default /etc/hosts) |

Started as root, the launcher runs the sandbox as the spec's `runtime.user` (through
`setpriv`) and gives that uid the run's workspace directories; started by another user,
the sandbox runs as that user. Inside, the server sees `/usr` (read-only, with the
`/bin` and `/lib` links), the dynamic-linker, TLS and timezone files of `/etc`, a
generated `/etc/passwd`, `/proc`, a minimal `/dev`, a 64 MiB `/tmp` and the spec's
mounts: nothing else of the host.

The launcher exits with the server's status, or 125 when it refuses to start (a tool
missing, an unknown agent, a bad run id, a workspace directory that is a symbolic link,
a secret it cannot read). On exit it stops the proxy and the bridge, and writes one
JSON audit line to the spec's sink:

```json
{"event":"launch","project":"acme","server":"repo","agent":"coder","run_id":"r1","started":"...","ended":"...",
 "exit_status":0,"run_dir":"/srv/mcp/workspaces/coder/r1","mounts":[...],"egress":{...},
 "egress_log":[{"result":"allowed","method":"CONNECT","host":"pypi.org","port":443,"status":200}]}
```
"""

MINIMAL_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "bwrap --bind/--ro-bind of each mount; workspace dirs under {root}/{agent}/{run_id}, refused if a symlink"),
    "hidden-paths": Capability("full", "the sandbox root is an empty tmpfs: only /usr, the dynamic-linker files, CA certificates and timezone of /etc, and the declared mounts exist"),
    "identity": Capability("full", "--unshare-user --uid/--gid, --cap-drop ALL, --disable-userns; a root launcher first drops to the spec's uid with setpriv"),
    "env": Capability("full", "--clearenv, then only the declared variables (plus PATH, and the proxy variables when egress goes through the proxy)"),
    "secrets": Capability("full", "read at launch from env, file or a systemd credential and handed in through a pipe (--ro-bind-data, or a variable set by a shim); vault and k8s-secret are not supported"),
    "egress-deny": Capability("full", "--unshare-net: the sandbox has only its own loopback"),
    "egress-allowlist": Capability("full", "no network but a unix socket bridged by socat to a per-launch squid that allows only the listed names and ports"),
    "metadata-blocking": Capability("full", "squid refuses metadata and private addresses after name resolution"),
    "listeners": Capability("full", "a listener inside the sandbox's own network namespace is unreachable from the host"),
    "memory": Capability("partial", "RLIMIT_AS (address space, not resident memory): programs that reserve large address ranges may fail early"),
    "pids": Capability("partial", "RLIMIT_NPROC for the sandbox uid, shared by every sandbox that runs as the same uid"),
    "cpu": Capability("partial", "RLIMIT_CPU of cpus x max_lifetime CPU-seconds: a budget, not a rate; without max_lifetime, not enforced"),
    "lifetime": Capability("full", "a watchdog sends SIGTERM at max_lifetime and SIGKILL 5 s later"),
    "idle-timeout": Capability("partial", "socat relays the stdio and ends the session after idle_timeout without a byte in either direction (the server reads end-of-input, then gets SIGTERM): a tool call that runs longer than idle_timeout without sending progress counts as idle"),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("partial", "denied commands (names in the PATH directories, or absolute paths) are hidden; the allow list, background and per-command limits are not enforced"),
    "workspace-lifecycle": Capability("partial", "each run id gets a fresh workspace; teardown does not remove it or copy artifacts out"),
    "audit-log": Capability("partial", "one JSON line per launch with the proxy's record of each destination; tool calls are not logged"),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a sandbox does not see"),
}


class BwrapTarget:
    name = "bwrap"
    description = "bubblewrap launcher scripts (stdio), with a squid egress proxy"
    capabilities = CAPABILITIES

    def build(self, plan: Plan) -> BuildOutput:
        output = BuildOutput()
        runtime = resources.files(__package__).joinpath("runtime.sh").read_text(encoding="utf-8")
        for name, sandbox in plan.servers.items():
            if not sandbox.runs_here:
                continue
            gaps, overrides = _server_gaps(sandbox)
            matrix, levels = matrix_gaps(sandbox, CAPABILITIES, overrides)
            gaps.extend(matrix)
            output.enforcement[name] = levels
            egress = egress_plan(sandbox)
            try:
                head = _launcher_head(plan, sandbox, egress)
            except Unrepresentable as exc:
                gaps.append(Gap("mounts", "none", sandbox.path, str(exc), unrepresentable=True))
                head = None
            output.gaps.extend(gaps)
            if head is None:
                continue
            output.files[f"{name}.sh"] = head + runtime
            output.executable.add(f"{name}.sh")
            if egress.mode == "proxy":
                text = header_text(plan, f"egress allowlist of server {name}; the launcher adds the port and file lines")
                output.files[f"{name}.squid.conf"] = squid_config(egress, text, [])
        return output


def _server_gaps(sandbox: EffectiveSandbox) -> tuple[list[Gap], Overrides]:
    """What this server asks for that bwrap cannot give it, beyond the matrix."""
    gaps: list[Gap] = []
    overrides: Overrides = {}
    if sandbox.transport.type != "stdio":
        gaps.append(Gap("listeners", "none", (*sandbox.path, "transport", "type"),
                        f"{sandbox.transport.type} transport: the bwrap target launches stdio servers; an HTTP server needs a listener on the host network, and sharing it gives up egress control (use the systemd target)"))
    for grant in sandbox.secrets:
        if grant.provider in ("vault", "k8s-secret"):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: the bwrap launcher reads env, file and systemd-credential secrets, not {grant.provider}"))
    egress = egress_plan(sandbox)
    if egress.mode == "direct-open":
        detail = "the sandbox would share the host network, where bwrap filters nothing; set egress.via: proxy"
        overrides["egress-deny"] = ("none", detail)
        overrides["metadata-blocking"] = ("none", detail)
        if any(d.kind != "cidr" for d in egress.allow):
            overrides["egress-allowlist"] = ("none", detail)
        if not sandbox.process.listeners:
            overrides["listeners"] = ("none", "the host network is shared, so a listener is reachable from the host")
    if sandbox.runtime.cpus is not None and sandbox.lifecycle.max_lifetime is None:
        overrides["cpu"] = ("none", "a CPU-time budget needs max_lifetime; bwrap has no CPU rate limit")
    if sandbox.runtime.user == 0:
        overrides["identity"] = ("partial", "runtime.user is 0: the sandbox runs as root inside its user namespace (capabilities are still dropped)")
    return gaps, overrides


def _launcher_head(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan) -> str:
    runtime = sandbox.runtime
    uid = runtime.user if runtime.user is not None else 65532
    gid = runtime.group if runtime.group is not None else uid
    workspace = plan.workspace
    agents = sandbox.agents
    lifetime = sandbox.lifecycle.max_lifetime
    cpu_seconds = math.ceil(runtime.cpus * lifetime) if runtime.cpus is not None and lifetime is not None else 0
    idle = sandbox.lifecycle.idle_timeout
    needs = ["socat", "squid", "setsid"] if egress.mode == "proxy" else []
    if idle is not None and "socat" not in needs:
        needs.append("socat")
    env_mode = sandbox.env.inherit if isinstance(sandbox.env.inherit, str) else "list"
    logging = sandbox.logging
    sink = logging.sink or "stderr"
    lines = [
        "#!/bin/bash",
        *header(plan, f"the sandbox of MCP server {sandbox.name}"),
        "# Use this file as the server's stdio command. MCPSPEC_AGENT picks the agent,",
        "# MCPSPEC_RUN_ID the run (default: a timestamp); the workspace is per agent run.",
        "set -euo pipefail",
        "umask 077",
        'here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)',
        "",
        f"SERVER={sh(sandbox.name)}",
        f"PROJECT={sh(plan.project)}",
        f"AGENTS=({sh_words(agents)})",
        f"DEFAULT_AGENT={sh(agents[0] if len(agents) == 1 else ('default' if not agents else ''))}",
        f"NEEDS=({sh_words(needs)})",
        f"SANDBOX_UID={int(uid)}",
        f"SANDBOX_GID={int(gid)}",
        f"WORKSPACE_ROOT={sh(workspace.root) if workspace is not None else ''}",
        f"PER_AGENT={1 if workspace is None or workspace.per_agent else 0}",
        f"ENV_MODE={sh(env_mode or 'none')}",
        f"SHARE_NET={1 if egress.mode == 'direct-open' else 0}",
        f"PROXY={1 if egress.mode == 'proxy' else 0}",
        f"MEMORY_KIB={runtime.memory // 1024 if runtime.memory is not None else 0}",
        f"PIDS={runtime.pids or 0}",
        f"CPU_SECONDS={cpu_seconds}",
        f"LIFETIME_SECONDS={math.ceil(lifetime) if lifetime is not None else 0}",
        f"IDLE_SECONDS={math.ceil(idle) if idle is not None else 0}",
        f"AUDIT={1 if logging.audit else 0}",
        f"AUDIT_SINK={sh(sink)}",
        f"AUDIT_MOUNTS={sh(compact_json(_audit_mounts(sandbox)))}",
        f"AUDIT_EGRESS={sh(compact_json(_audit_egress(egress)))}",
        f"COMMAND=({sh_words(sandbox.command)})",
        "",
        "declare_sandbox() {",
        *(f"  {line}" for line in _declarations(sandbox)),
        "}",
        "",
    ]
    if sandbox.command_is_shell:
        raise Unrepresentable("a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise Unrepresentable(f"server {sandbox.name!r} has no command to launch")
    return "\n".join(lines)


def _declarations(sandbox: EffectiveSandbox) -> list[str]:
    out: list[str] = []
    for mount in sorted(sandbox.mounts, key=lambda m: (m.target.count("/"), m.target)):
        out.append(_mount_line(mount))
    env = sandbox.env
    if isinstance(env.inherit, list):
        out.extend(f"inherit {sh(name)}" for name in env.inherit)
    elif env.inherit == "minimal":
        out.extend(f"inherit {name}" for name in MINIMAL_ENV)
    declared = dict(env.set or {})
    if "PATH" not in declared and env.inherit != "all" and not (env.inherit == "minimal" or (isinstance(env.inherit, list) and "PATH" in env.inherit)):
        declared["PATH"] = DEFAULT_PATH
    out.extend(f"setenv {sh(name)} {sh(value)}" for name, value in sorted(declared.items()))
    for grant in sandbox.secrets:
        provider, ref = grant.provider, grant.ref
        if provider in ("vault", "k8s-secret"):
            continue
        if provider == "systemd-credential":
            provider = "credential"
        elif provider == "file" and ref.startswith("~/"):
            provider, ref = "home", ref[2:]
        if grant.file is not None:
            out.append(f"secret_file {sh(grant.name)} {provider} {sh(ref)} {sh(grant.file)}")
        if grant.env is not None:
            out.append(f"secret_env {sh(grant.name)} {provider} {sh(ref)} {sh(grant.env)}")
    for command in sandbox.process.deny or ():
        if "/" not in command or command.startswith("/"):
            out.append(f"mask {sh(command)}")
    if sandbox.workdir is not None:
        out.append(f"args+=(--chdir {sh(sandbox.workdir)})")
    return out or [":"]


def _mount_line(mount: EffectiveMount) -> str:
    if mount.workspace_dir is not None:
        if mount.tmpfs:
            return f"scratch {mount.size or 268435456} {sh(mount.target)}"
        return f"workspace {mount.mode} {sh(mount.workspace_dir)} {sh(mount.target)}"
    if mount.source == "~" or mount.source.startswith("~/"):
        return f"home_path {mount.mode} {sh(mount.source[2:] or '.')} {sh(mount.target)}"
    return f"host_path {mount.mode} {sh(mount.source)} {sh(mount.target)}"


def _audit_mounts(sandbox: EffectiveSandbox) -> list[dict[str, str]]:
    out = []
    for mount in sandbox.mounts:
        source = f"{{run_dir}}/{mount.workspace_dir}" if mount.workspace_dir is not None else mount.source
        out.append({"from": "tmpfs" if mount.tmpfs else source, "to": mount.target, "mode": mount.mode})
    return out


def _audit_egress(egress: EgressPlan) -> dict[str, object]:
    return {"mode": egress.mode, "default": egress.default, "allow": [d.text for d in egress.allow], "deny": [d.text for d in egress.deny]}


TARGET = BwrapTarget()
