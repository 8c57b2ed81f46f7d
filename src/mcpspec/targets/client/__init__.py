"""The client target: an MCP client's config in which every server is started by `mcpspec run`.

`mcpspec run FILE SERVER` builds the bwrap launcher of the server as `mcpspec build`
would and relays MCP to it, enforcing the tool allowlist, approvals and limits. So the
sandbox is the bwrap target's (its matrix and its gaps are this target's), the call
policy is `mcpspec run`'s, and the config itself holds only the spec's path and the
servers' names: no secret (`mcpspec run` reads them at start), no other value of the spec.
Where the client can say which tools need a person's approval, the config says it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.facts import approval_mode
from mcpspec.targets import bwrap
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.client.formats import CLIENTS, Entry, rule_tool, valid_server_name

_RUN = "tests/test_run_relay_real.py::"

USAGE = """
## Running the output

    mcpspec build mcp-sandbox.yaml --target client --client CLIENT --out build/client

`CLIENT` is one of claude-desktop, claude-code, vscode, cursor or codex. The build writes the
client's files under `--out` at the place the client reads them from; copy them there, or merge
them into the files you have (a build replaces a file it writes, so point `--out` at your project
only when it has no such file yet; a rebuild for another client removes the files the earlier
build wrote, and only those):

{clients}

Every server entry is `mcpspec run /abs/path/mcp-sandbox.yaml SERVER` (the spec's absolute path,
taken from FILE when you build): `mcpspec run` builds the server's bubblewrap launcher as the
bwrap target does, starts it and relays MCP, enforcing the tool allowlist, approvals, rate limits
and call timeouts (docs/run.md). The client finds `mcpspec` on the PATH it starts servers with:
a desktop app often has a shorter PATH than your shell (Claude Desktop on macOS does not see
`~/.local/bin`), so install mcpspec where that PATH looks (`/usr/local/bin`) or link it there.
`mcpspec run` needs Linux with bubblewrap (as the bwrap target does): the client must run there.
A server that serves several agents is refused: one client config is one agent's. A spec path
with `${` is refused for the clients that expand it in arguments (Claude Code, VS Code, Cursor).

No secret is in the config. `mcpspec run` reads each secret at start from the server's provider:
an `env` secret from the environment the client gives it, which for a desktop app is not your
shell's (prefer `file` or `systemd-credential` secrets there).

Approvals. `mcpspec run` holds every call that needs approval for its approver (`--approver`, or
`approver` in the project config; under a client there is no terminal, so without an approver the
call is denied). Claude Code's `.claude/settings.json` also gets `permissions`: `allow` for the tools
no person approves, `ask` for those approved at every call, as `mcp__SERVER__TOOL` (a `per-session`
tool gets no rule: Claude Code's own prompt). Codex gets
`enabled_tools`, the spec's tool list, when unlisted tools are denied. Claude Desktop, VS Code and
Cursor have no file setting for either: the build reports it (TG003), and their own prompts stay
as they are.
"""

# The sandbox is bwrap's: same level, same proofs, said once here.
CAPABILITIES: dict[str, Capability] = {
    control: Capability(cap.level, f"through `mcpspec run`, as the bwrap target: {cap.how}", cap.proof)
    for control, cap in bwrap.CAPABILITIES.items()
}
CAPABILITIES["call-policy"] = Capability(
    "full",
    "`mcpspec run` relays MCP between the client and the sandbox: it hides and refuses unlisted tools, holds calls that need "
    "approval for its approver (denied without one), and enforces rate limits and call timeouts",
    (_RUN + "test_allowlist_filters_the_listing_and_refuses_unlisted_calls_before_the_server",
     _RUN + "test_approval_command_allows_or_denies_and_a_denied_call_never_arrives",
     _RUN + "test_rate_limit_refuses_the_call_over_the_rate", _RUN + "test_call_timeout_answers_the_client_and_cancels_at_the_server"),
)


class ClientTarget:
    name = "client"
    description = "an MCP client's config (Claude Desktop, Claude Code, VS Code, Cursor, Codex) that starts every server through `mcpspec run`"
    usage = USAGE.replace("{clients}", "\n".join(f"- `{c.name}`: {c.where}" for c in CLIENTS.values()))
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset({"client", "spec_path"})

    def check_options(self, options: BuildOptions) -> None:
        if options.client not in CLIENTS:
            raise ValueError(f"the client target needs --client: one of {', '.join(CLIENTS)}")

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        gaps, overrides = bwrap.TARGET.server_gaps(plan, sandbox, options)
        client = CLIENTS[str(options.client)]
        gated = sorted(name for name, tool in sandbox.tools.items() if approval_mode(plan, tool) is not None)
        path = (*sandbox.path, "tools")
        if gated and not client.approvals:
            gaps.append(Gap("call-policy", "partial", path,
                            f"{client.name} has no setting for which tools need approval ({', '.join(gated)}): its own prompt stays as it is, "
                            "and `mcpspec run` holds each such call for its approver (denied without one)"))
        if client.name == "claude-code":
            unruled = sorted(name for name in sandbox.tools if not rule_tool(name))
            if unruled:
                gaps.append(Gap("call-policy", "partial", path,
                                f"a Claude Code permission rule names a tool mcp__{sandbox.name}__TOOL in letters, digits, '_' and '-': "
                                f"no rule for {', '.join(unruled)} (`mcpspec run` still enforces its approval)"))
        return gaps, overrides

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        bwrap.TARGET.server_files(plan, sandbox, options)  # what `mcpspec run` builds: its refusals are this build's
        if not valid_server_name(sandbox.name):
            raise Refused("process-policy", sandbox.path, f"{options.client} cannot name a server {sandbox.name!r}")
        if len(sandbox.agents) > 1:
            raise Refused("process-policy", sandbox.path, f"server {sandbox.name!r} serves agents {', '.join(sandbox.agents)}: "
                          "one client config is one agent's, and `mcpspec run` must be told which (--agent)")
        return Emitted()

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        client = CLIENTS[str(options.client)]
        spec = options.spec_path
        if spec is None or not spec.startswith("/"):
            raise Refused("process-policy", (), "the client's config needs the spec's absolute path for `mcpspec run`")
        if client.expands and "${" in spec:
            raise Refused("process-policy", (), f"{client.name} expands '${{...}}' in a server's arguments: the spec's path {spec!r} would not reach `mcpspec run` as it is (move or rename it)")
        entries = [_entry(plan, sandbox, spec) for sandbox in built]
        return Emitted(client.files(entries)) if entries else Emitted()


def _entry(plan: Plan, sandbox: EffectiveSandbox, spec: str) -> Entry:
    args = ["run", spec, sandbox.name]
    if sandbox.agents:
        args += ["--agent", sandbox.agents[0]]
    modes = {name: approval_mode(plan, tool) for name, tool in sandbox.tools.items()}
    return Entry(
        name=sandbox.name,
        args=tuple(args),
        allow=tuple(sorted(name for name, mode in modes.items() if mode is None)),
        ask=tuple(sorted(name for name, mode in modes.items() if mode == "always")),
        listed=tuple(sorted(sandbox.tools)) if sandbox.unlisted_tools == "deny" and sandbox.tools else None,
    )


TARGET = ClientTarget()
