"""VS Code's own sandbox for stdio servers (`--client vscode --via srt`): `sandboxEnabled` and the `sandbox` block.

VS Code (Linux and macOS) starts a stdio server whose entry says ``"sandboxEnabled": true``
under the sandbox-runtime it ships, with settings made from the ``sandbox`` block of the
mcp.json (one block for every server of the file): ``filesystem.{allowWrite,denyRead,denyWrite}``
and ``network.{allowedDomains,deniedDomains}``; every other key of ``filesystem`` and ``network``
is dropped, other top-level keys pass. VS Code adds ``~/.npm`` and the server's working directory
to ``allowWrite`` and ``registry.npmjs.org`` to ``allowedDomains`` (``mcpSandboxService.ts``);
srt's denies win over its allows, so the block denies those back unless the spec grants them.
Without ``allowRead`` reads cannot be denied from ``/`` down: the block denies the host's usual
data directories that hold no mount. The entry runs ``/usr/bin/env -i`` first, so the server gets
the declared environment and srt's proxy variables, not VS Code's.
"""

from __future__ import annotations

import math
import re
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.targets.base import Capability, Refused
from mcpspec.targets.egress import egress_plan
from mcpspec.targets.srt import CAPABILITIES as SRT
from mcpspec.targets.srt.launcher import environment, refuse_writable_tools
from mcpspec.targets.srt.settings import settings, under

# What VS Code adds to every sandbox (mcpSandboxService.ts: _defaultAllowedDomains, _getDefaultAllowWrite).
VSCODE_DOMAINS = ("registry.npmjs.org",)
VSCODE_WRITES = ("~/.npm",)
# What srt itself makes writable under the home when no read rule hides it (sandbox-utils.js, HOME_CONVENIENCE_WRITE_DIRS:
# ~/.npm/_logs, under ~/.npm above, and ~/.claude/debug): with a mount in a home, ~ is not denied and they would be.
SRT_HOME_WRITES = ("~/.claude/debug",)
# Denied for reading unless a mount lies in them: the user's files and the host's data and state.
DENY_READ = ("~", "/home", "/root", "/srv", "/opt", "/mnt", "/media", "/var", "/data", "/workspace", "/etc/shadow",
             "/etc/gshadow", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d")
# The variables srt sets for the sandbox's way out (its proxy), which the entry keeps when it drops VS Code's environment.
# A fixed script, no value of the spec in it: those follow as its arguments. (No "${": VS Code would expand it.)
SRT_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", "SANDBOX_RUNTIME", "TMPDIR")
KEEP_SRT = "exec /usr/bin/env -i " + " ".join(f'"{name}=${name}"' for name in SRT_VARIABLES) + ' "$@"'
_GLOB = re.compile(r"[*?\[\]{}]")
_PROOF = "tests/test_target_srt_real.py::"

CAPABILITIES: dict[str, Capability] = {
    # srt's rows, without the srt launcher's proofs: the rows a test attacks through VS Code's way of running srt name it below.
    **{control: Capability(cap.level, f"VS Code runs the server under its own srt: {cap.how}") for control, cap in SRT.items()},
    "egress-deny": Capability(
        "full",
        "srt unshares the network: the sandbox has its own loopback and srt's proxy, which refuses every name not allowed; VS Code drops "
        "deniedResolvedAddresses, so a denied address is in deniedDomains (refused after resolution too) and a denied range, which "
        "deniedDomains cannot hold, lowers this control for the server (reported); a writable /tmp, where srt keeps its proxy's "
        "sockets, is refused",
        (_PROOF + "test_vscode_s_sandbox_refuses_what_vs_code_adds",
         "tests/test_redteam_srt.py::test_vscode_a_name_resolving_to_a_denied_address_is_refused_for_it",
         "tests/test_redteam_srt.py::test_vscode_refuses_a_writable_tmp_where_srt_keeps_its_proxy_sockets"),
    ),
    "mounts": Capability(
        "partial",
        "VS Code's srt runs bubblewrap, socat, ripgrep and which from VS Code's own PATH, on the host, and nothing checks that no rw "
        "mount holds a directory of it (the build refuses only /usr/local/bin, /usr/bin and /bin): a program the server plants there "
        "would run outside any sandbox; otherwise the sandbox block's allowWrite holds the rw mounts; VS Code's own additions (~/.npm, the working directory) and srt's "
        "(~/.claude/debug, writable when ~ is not denied) are denied back (denyWrite wins) unless the spec writes there; a ro mount "
        "inside an rw one is in denyWrite",
        (_PROOF + "test_vscode_s_sandbox_writes_only_the_rw_mounts",
         "tests/test_redteam_srt.py::test_vscode_a_project_in_the_home_gets_no_write_srt_adds"),
    ),
    "hidden-paths": Capability(
        "partial",
        "VS Code passes no allowRead, so reads cannot be denied from / down: denyRead holds ~, /home, /root, /srv, /opt, /mnt, /media, "
        "/var, /data, /workspace and /etc's secrets, except a directory a mount lies in; the rest of the host stays readable",
        (_PROOF + "test_vscode_s_sandbox_writes_only_the_rw_mounts",),
    ),
    "env": Capability(
        "partial",
        "the entry runs env -i with the declared variables (an inherited one as ${env:NAME}, empty when VS Code has none) and srt's "
        "proxy variables, so VS Code's environment stops there",
    ),
    "egress-allowlist": Capability(
        "full",
        "network.allowedDomains holds the spec's names and ports; registry.npmjs.org, which VS Code always adds, is in deniedDomains "
        "(deny wins) unless the spec allows it",
        (_PROOF + "test_vscode_s_sandbox_refuses_what_vs_code_adds",),
    ),
    "metadata-blocking": Capability(
        "partial",
        "VS Code drops deniedResolvedAddresses: srt's own check still refuses a name resolving to loopback, link-local, metadata or "
        "the host's addresses, but not to private ranges (10/8, 172.16/12, 192.168/16, fc00::/7)",
    ),
    "lifetime": Capability("partial", "timeout(1) inside the sandbox asks the server to stop a second before max_lifetime and kills it at "
                           "max_lifetime; no test measures it"),
    "identity": Capability("partial", "the server runs as the user VS Code runs as, in srt's user namespace with no capabilities; runtime.user is not applied"),
    "call-policy": Capability(
        "none",
        "nothing relays MCP: VS Code approves a sandboxed server's tools without asking, and no tool allowlist, rate limit or call timeout "
        "is enforced",
    ),
}


def _path(value: str, sandbox: EffectiveSandbox) -> str:
    if _GLOB.search(value) or "${" in value:
        raise Refused("mounts", (*sandbox.path, "mounts"), f"VS Code's sandbox block reads {value!r} as a pattern or a variable: "
                      "a mount path there holds none of * ? [ ] {{ }} or ${{")
    return value



def sandbox_block(sandbox: EffectiveSandbox) -> tuple[dict[str, Any], str]:
    """The mcp.json ``sandbox`` block this server needs, and the working directory its entry sets."""
    rules = settings(sandbox)
    refuse_writable_tools(sandbox)
    filesystem, network = rules["filesystem"], rules["network"]
    mounts = [_path(mount.target, sandbox) for mount in sandbox.mounts]  # host paths where they are (settings() refused the rest)
    writable = [_path(entry["path"], sandbox) for entry in filesystem["allowWrite"]]
    cwd = sandbox.workdir or (writable[0] if writable else "/")
    deny_write = [entry["path"] for entry in filesystem["denyWrite"]] + list(VSCODE_WRITES) + list(SRT_HOME_WRITES)
    if not any(under(cwd, path) for path in writable):
        deny_write.append(cwd)  # VS Code makes the working directory writable; the spec does not
    allowed = list(network["allowedDomains"])
    wanted = {entry.split(":")[0] for entry in allowed}
    denied = list(network["deniedDomains"]) + [name for name in VSCODE_DOMAINS if name not in wanted] + denied_addresses(sandbox)
    # A directory a mount lies in stays readable (nothing re-allows the mount inside it); so does ~ when a mount may lie in a home.
    homes = any(under(mount, "/home") or under(mount, "/root") for mount in mounts)
    deny_read = [path for path in DENY_READ if not any(under(mount, path) for mount in mounts) and not (path == "~" and homes)]
    block = {
        "filesystem": {"allowWrite": writable, "denyRead": deny_read, "denyWrite": list(dict.fromkeys(deny_write))},
        "network": {"allowedDomains": allowed, "deniedDomains": denied},
        "allowNestedUserNamespaces": False,
    }
    return block, cwd


def _denied_networks(sandbox: EffectiveSandbox) -> list[Any]:
    return [d.network for d in egress_plan(sandbox).deny if d.kind == "cidr"]


def denied_addresses(sandbox: EffectiveSandbox) -> list[str]:
    """The spec's denied single addresses, as deniedDomains literals: VS Code drops deniedResolvedAddresses, but srt refuses a
    name resolving to an address its deniedDomains names (on every port: narrower than a denied port, never wider)."""
    return [str(n.network_address) if n.version == 4 else f"[{n.network_address}]" for n in _denied_networks(sandbox)
            if n.num_addresses == 1]


def unenforced_ranges(sandbox: EffectiveSandbox) -> list[str]:
    """The spec's denied address ranges VS Code's sandbox cannot refuse (deniedDomains takes single addresses only)."""
    return [str(n) for n in _denied_networks(sandbox) if n.num_addresses > 1]


def widened(sandbox: EffectiveSandbox) -> list[str]:
    """The names VS Code allows on every port that the spec allows on one port only (the block cannot deny the other ports)."""
    return sorted({d.host for d in sandbox.egress.allow if d.kind == "domain" and d.host in VSCODE_DOMAINS and d.port is not None})


def command(sandbox: EffectiveSandbox) -> list[str]:
    """The entry's command line: env -i with the declared variables, the limits, then the server."""
    declared, inherited, inherit_all = environment(sandbox)
    for name, value in declared:
        if "${" in value:
            raise Refused("env", sandbox.origin("env.set"), f"VS Code expands '${{...}}' in a server's arguments: {name}'s value would not reach it as written")
    if sandbox.command_is_shell or not sandbox.command:
        raise Refused("process-policy", (*sandbox.path, "command"), "give the command as a list of words (a shell string would run in a shell)")
    if "=" in sandbox.command[0]:  # env would read it as one more variable
        raise Refused("process-policy", (*sandbox.path, "command"), "a command whose program holds '=' cannot follow env's variables")
    if any("${" in word for word in sandbox.command):
        raise Refused("process-policy", (*sandbox.path, "command"), "VS Code expands '${...}' in a server's arguments: the command would not reach it as written")
    if inherit_all:
        words = ["/usr/bin/env", *(f"{name}={value}" for name, value in declared)]
    else:
        words = ["/bin/sh", "-c", KEEP_SRT, "mcpspec-vscode", *(f"{name}=${{env:{name}}}" for name in inherited),
                 *(f"{name}={value}" for name, value in declared)]
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is not None:
        words += ["/usr/bin/timeout", "--kill-after=1", str(max(1, math.floor(lifetime) - 1))]
    limits = [f"--as={sandbox.resources.memory}"] if sandbox.resources.memory is not None else []
    limits += [f"--nproc={sandbox.resources.pids}"] if sandbox.resources.pids is not None else []
    if limits:
        words += ["/usr/bin/prlimit", *limits, "--"]
    return [*words, *sandbox.command]


def matrix_text() -> str:
    """The matrix of `--via srt` as a Markdown table (the client README shows it)."""
    from mcpspec.targets.base import CONTROLS

    rows = [f"| {control.title} | {CAPABILITIES[control.id].level} | {CAPABILITIES[control.id].how.removeprefix('VS Code runs the server under its own srt: ')} |"
            for control in CONTROLS]
    return "\n".join(["| control | level | how |", "|---|---|---|", *rows])
