"""The client target: an MCP client's config in which every server is started by `mcpspec run`.

`mcpspec run FILE SERVER` builds the bwrap launcher of the server as `mcpspec build`
would and relays MCP to it, enforcing the tool allowlist, approvals and limits. So the
sandbox is the bwrap target's (its matrix and its gaps are this target's), the call
policy is `mcpspec run`'s, and the config itself holds only the spec's path and the
servers' names: no secret (`mcpspec run` reads them at start), no other value of the spec.
Where the client can say which tools need a person's approval, the config says it too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from mcpspec.ir.plan import AGENT_TOKEN, RUN_TOKEN, EffectiveSandbox, Plan
from mcpspec.rules.facts import approval_mode
from mcpspec.targets import bwrap, compose, srt
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Level, Overrides, Refused
from mcpspec.targets.client import vscode_sandbox
from mcpspec.targets.client.formats import CLIENTS, Client, Entry, rule_tool, valid_server_name
from mcpspec.targets.compose.envsecrets import WRAPPER_FILE, from_environment
from mcpspec.targets.compose.service import delivered as compose_delivered

_RUN = "tests/test_run_relay_real.py::"
_CARRIERS = "tests/test_run_carriers.py::"
_LOCK = "tests/test_lock_everything.py::"

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

## Through compose instead of `mcpspec run`

    mcpspec build mcp-sandbox.yaml --target client --client CLIENT --via docker-compose \
        --proxy-image localhost/squid@sha256:... --out /srv/mcp/client

`--via docker-compose` (or `podman-compose`) writes the compose target's build under
`OUT/compose/` (`--proxy-image` as for that target) and makes every entry
`docker compose --project-name mcpspec-PROJECT-AGENT-CLIENT --file /abs/OUT/compose/compose.yaml
run --rm -T SERVER` (`podman-compose` with the same arguments): `run` starts the server's
egress proxy first, and the stack's containers, networks and proxies are shared by the runs of
that client. Keep the output where it is: the entries name its absolute path. The matrix is then
the compose target's (targets/compose/README.md), not `mcpspec run`'s: no relay sits between the
client and the server, so nothing hides unlisted tools, holds calls for approval, or enforces rate
limits and call timeouts (Claude Code's `permissions` still ask before the tools that need
approval: call-policy partial; other clients: none, reported as TG003).

Workspace dirs are subdirectories of one fixed run directory per client, the spec's workspace path
with `{agent}` the agent and `{run_id}` the client's name (`/srv/mcp/workspaces/coder/vscode`).
Every entry sets `MCPSPEC_RUN_DIR` to it, since compose reads the whole file at each run (and, for
podman-compose, `COMPOSE_PROJECT_DIR` to `OUT/compose`, where it finds the seccomp profiles). Create
its subdirectories before the first run (`mkdir -p "$dir"/input "$dir"/output`): compose does not.
Every session of the client shares them; empty them yourself between runs.

## VS Code's own sandbox instead (`--via srt`)

    mcpspec build mcp-sandbox.yaml --target client --client vscode --via srt --out .

VS Code (Linux and macOS) runs a stdio server whose entry says `"sandboxEnabled": true` under the
sandbox-runtime (srt) it ships, with the `sandbox` block of `.vscode/mcp.json`. With `--via srt`
each entry starts the server itself (no `mcpspec run`), as `sh -c 'exec env -i <srt's proxy
variables> "$@"'` with the declared variables, then `timeout` and `prlimit` for max_lifetime,
memory and processes, then the spec's command; `cwd` is the spec's `workdir` (or the first rw
mount, or `/`). The `sandbox` block is the srt target's settings as far as VS Code passes them on
(`filesystem.allowWrite`, `denyRead`, `denyWrite`, `network.allowedDomains`, `deniedDomains`):
writes go only to the rw mounts; what VS Code adds (`~/.npm` and the working directory writable,
`registry.npmjs.org` allowed), and `~/.claude/debug`, which srt makes writable when `~` is not denied,
are denied back unless the spec grants them (srt's denies win); reads are
denied for `~`, `/home`, `/root`, `/srv`, `/opt`, `/mnt`, `/media`, `/var`, `/data`, `/workspace`
and `/etc`'s secrets, except a directory a mount lies in (VS Code passes no `allowRead`, so the
rest of the host stays readable: hidden paths partial), and VS Code drops srt's resolved-address
denies (private ranges: partial). srt binds its proxy's sockets from its temporary directory, which
VS Code puts in its own (on Linux under /tmp): a remote VS Code server whose temporary directory
lies under a denied path (`~`) leaves the server without network. One mcp.json has one block: servers that need different ones are
refused (build them into separate workspaces). VS Code approves a sandboxed server's tools without
asking and nothing relays MCP, so approvals, the tool allowlist, rate limits and call timeouts are
not enforced (TG003). The matrix of `--via srt` (tests/test_target_srt_real.py runs VS Code's way
of starting srt on the generated block):

{vscode_matrix}
"""

# The sandbox is bwrap's: same level, same proofs, said once here.
CAPABILITIES: dict[str, Capability] = {
    control: Capability(cap.level, f"through `mcpspec run`, as the bwrap target: {cap.how}", cap.proof)
    for control, cap in bwrap.CAPABILITIES.items()
}
CAPABILITIES["call-policy"] = Capability(
    "full",
    "`mcpspec run` relays MCP between the client and the sandbox: it hides and refuses unlisted tools, holds calls that need "
    "approval for its approver (denied without one), who is shown the exact arguments the server will get (only the spec's own "
    "secrets masked, by name; everything escaped to printable ASCII; nothing cut), and enforces rate limits and call timeouts. "
    "A tool's argument rules (`when`) allow, send to approval or refuse a call by its arguments, a path read every way a server "
    "may read it (dot segments, percent-escapes, backslashes, NFKC) and an argument that cannot be judged never allowed; a refuse "
    "rule catches a string every way a shell may read it (blanks, quotes, backslashes, invisible characters, /bin/rm), though it "
    "stays a blocklist (lint HR008). "
    "A server may ask the client nothing: roots, elicitation and sampling requests are refused wherever they are carried "
    "(a request, an input_required result of any method, a tasks result, a notification, a batch, _meta, an error's data). "
    "With mcp-sandbox.lock, whatever differs from it (initialize instructions and serverInfo, every field of every tool, "
    "prompt, resource and resource template) is refused, and keys the lock cannot pin are stripped. A prompt, resource or "
    "template a listing hides is refused by name too (prompts/get, resources/read and subscribe, completion/complete), a URI "
    "in every spelling the server may take for it (case, percent-escapes, dot segments, backslashes, NFKC, a query). All of it holds the same on "
    "MCP 2025-06-18, 2025-11-25 and 2026-07-28 (the spec's protocol_revisions; others refused with -32022), and a listing "
    "reaches a 2026-07-28 client uncacheable (ttlMs 0)",
    (_RUN + "test_allowlist_filters_the_listing_and_refuses_unlisted_calls_before_the_server",
     _RUN + "test_approval_command_allows_or_denies_and_a_denied_call_never_arrives",
     "tests/test_run_argrules_real.py::test_a_tool_runs_inside_the_allowed_area_needs_approval_outside_and_hostile_paths_never_pass",
     "tests/test_run_argrules_real.py::test_a_refuse_rule_catches_every_spelling_a_shell_reads_as_the_refused_value",
     _RUN + "test_rate_limit_refuses_the_call_over_the_rate", _RUN + "test_call_timeout_answers_the_client_and_cancels_at_the_server",
     _CARRIERS + "test_a_request_for_input_inside_a_result_is_refused",
     _CARRIERS + "test_a_request_for_input_in_a_notification_a_batch_or_a_request_never_reaches_the_client",
     _CARRIERS + "test_the_sdk_client_never_answers_a_request_hidden_in_a_result",
     "tests/test_run_approvals_view.py::test_the_approver_sees_exactly_what_the_server_gets_but_the_specs_secret",
     _LOCK + "test_a_change_after_locking_is_shown_by_check_and_refused_by_run",
     _LOCK + "test_keys_the_lock_cannot_pin_never_reach_the_client",
     _LOCK + "test_a_prompt_is_served_only_once_a_listing_showed_it_unchanged",
     "tests/test_run_resources_real.py::test_a_hidden_resource_or_template_is_refused_by_name_in_every_spelling",
     "tests/test_run_resources_real.py::test_with_a_lock_only_a_pinned_resource_or_template_shown_unchanged_is_read",
     "tests/test_run_redteam.py::test_a_listing_answered_just_before_list_changed_does_not_renew_the_verdicts",
     "tests/test_run_redteam.py::test_a_call_judged_before_list_changed_is_judged_again_if_sent_after",
     "tests/test_run_redteam.py::test_a_resource_read_judged_before_list_changed_is_judged_again_if_sent_after",
     "tests/test_run_revisions_real.py::test_every_policy_holds_on_each_revision"),
)


# Where a compose build's files go under --out, and the engines that run it.
COMPOSE_DIR = "compose"
ENGINES = {"docker-compose": ("docker", ("compose",)), "podman-compose": ("podman-compose", ())}
VIAS = ("run", *ENGINES, "srt")


class ClientTarget:
    name = "client"
    description = "an MCP client's config (Claude Desktop, Claude Code, VS Code, Cursor, Codex) that starts every server through `mcpspec run` (or a compose file)"
    usage = USAGE.replace("{clients}", "\n".join(f"- `{c.name}`: {c.where}" for c in CLIENTS.values())).replace(
        "{vscode_matrix}", vscode_sandbox.matrix_text())
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset({"client", "spec_path", "via", "out_dir", "proxy_image"})

    def check_options(self, options: BuildOptions) -> None:
        if options.client not in CLIENTS:
            raise ValueError(f"the client target needs --client: one of {', '.join(CLIENTS)}")
        if options.via not in VIAS:
            raise ValueError(f"--via must be one of {', '.join(VIAS)}")
        if options.via in ("run", "srt") and options.proxy_image is not None:
            raise ValueError("--proxy-image is for --via docker-compose or podman-compose: `mcpspec run` runs the bwrap launcher's own proxy, srt its own")
        if options.via == "srt" and options.client != "vscode":
            raise ValueError("--via srt is for --client vscode, which runs a stdio server under its own sandbox-runtime (sandboxEnabled)")
        if options.via in ENGINES and (options.out_dir is None or not options.out_dir.startswith("/")):
            raise ValueError(f"--via {options.via} needs the output directory's absolute path, where the entries find the compose file")

    def secret_source(self, options: BuildOptions) -> str:
        """Secrets come from the sources of what the entries start: `mcpspec run` (bwrap) or the compose file."""
        return "bwrap" if options.via == "run" else "srt" if options.via == "srt" else "compose"

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        client = CLIENTS[str(options.client)]
        if options.via == "srt":  # VS Code's srt is the sandbox: its matrix says how far each control goes
            gaps, overrides = srt.TARGET.server_gaps(plan, sandbox, options)
            for control, capability in vscode_sandbox.CAPABILITIES.items():
                overrides.setdefault(control, (capability.level, f"through VS Code's sandbox (--via srt): {capability.how}"))
            for name in vscode_sandbox.widened(sandbox):
                gaps.append(Gap("egress-allowlist", "partial", sandbox.origin("egress.allow"), f"VS Code allows {name} on every port, "
                                "and the spec on one: the sandbox block cannot deny the others"))
            ranges = vscode_sandbox.unenforced_ranges(sandbox)
            if ranges:
                gaps.append(Gap("egress-deny", "partial", sandbox.origin("egress.deny"), f"egress.deny: VS Code drops deniedResolvedAddresses: an "
                                f"allowed name that resolves into {', '.join(ranges)} is not refused (its deniedDomains takes single addresses only)"))
            gated = sorted(name for name, tool in sandbox.tools.items() if approval_mode(plan, tool) is not None)
            if gated:
                gaps.append(Gap("call-policy", "none", (*sandbox.path, "tools"), f"VS Code approves every tool of a sandboxed server without "
                                f"asking: {', '.join(gated)} need a person's approval, and nothing asks for it under --via srt"))
            return gaps, overrides
        if options.via == "run":
            gaps, overrides = bwrap.TARGET.server_gaps(plan, sandbox, options)
        else:
            gaps, overrides = compose.TARGET.server_gaps(plan, sandbox, options)
            # The compose file is the sandbox: its matrix, not `mcpspec run`'s, says how far each control goes.
            for control, capability in compose.CAPABILITIES.items():
                overrides.setdefault(control, (capability.level, f"through {options.via}, as the compose target: {capability.how}"))
            overrides["call-policy"] = _compose_call_policy(client)
        gated = sorted(name for name, tool in sandbox.tools.items() if approval_mode(plan, tool) is not None)
        path = (*sandbox.path, "tools")
        if gated and not client.approvals:
            holder = "`mcpspec run` holds each such call for its approver (denied without one)" if options.via == "run" else "nothing else holds such a call: no `mcpspec run` relays MCP under compose"
            gaps.append(Gap("call-policy", "partial", path, f"{client.name} has no setting for which tools need approval ({', '.join(gated)}): its own prompt stays as it is, and {holder}"))
        if client.name == "claude-code":
            unruled = sorted(name for name in sandbox.tools if not rule_tool(name))
            if unruled:
                still = "`mcpspec run` still enforces its approval" if options.via == "run" else "nothing else enforces its approval under compose"
                gaps.append(Gap("call-policy", "partial", path,
                                f"a Claude Code permission rule names a tool mcp__{sandbox.name}__TOOL in letters, digits, '_' and '-': "
                                f"no rule for {', '.join(unruled)} ({still})"))
        return gaps, overrides

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        if options.via == "srt":
            if sandbox.transport.type != "stdio":
                raise Refused("listeners", (*sandbox.path, "transport"), "VS Code sandboxes stdio servers only: an HTTP server would run unsandboxed")
            vscode_sandbox.sandbox_block(sandbox)  # what VS Code's srt cannot say is refused here, for this server
            vscode_sandbox.command(sandbox)
            emitted = Emitted()
        elif options.via == "run":
            bwrap.TARGET.server_files(plan, sandbox, options)  # what `mcpspec run` builds: its refusals are this build's
            emitted = Emitted()
        else:
            emitted = _in_compose_dir(compose.TARGET.server_files(plan, sandbox, options))
        if not valid_server_name(sandbox.name):
            raise Refused("process-policy", sandbox.path, f"{options.client} cannot name a server {sandbox.name!r}")
        if len(sandbox.agents) > 1:
            raise Refused("process-policy", sandbox.path, f"server {sandbox.name!r} serves agents {', '.join(sandbox.agents)}: "
                          "one client config is one agent's, and `mcpspec run` must be told which (--agent)")
        return emitted

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        client = CLIENTS[str(options.client)]
        if not built:
            return Emitted()
        if options.via == "srt":
            return Emitted(client.files(_srt_entries(plan, built)))
        if options.via == "run":
            spec = options.spec_path
            if spec is None or not spec.startswith("/"):
                raise Refused("process-policy", (), "the client's config needs the spec's absolute path for `mcpspec run`")
            _refuse_expanded(client, spec, "the spec's path")
            return Emitted(client.files([_run_entry(plan, sandbox, spec) for sandbox in built]))
        files = _in_compose_dir(compose.TARGET.project_files(plan, built, options))
        compose_file = f"{str(options.out_dir).rstrip('/')}/{COMPOSE_DIR}/compose.yaml"
        _refuse_expanded(client, compose_file, "the compose file's path")
        # Compose reads the whole file at every run: when one service's volumes name the run directory, every entry must set it.
        run_dir = next((found for sandbox in built if (found := run_directory(sandbox, client)) is not None), None)
        if run_dir is not None:
            _refuse_expanded(client, run_dir, "the workspace's run directory")
        entries = [_compose_entry(plan, sandbox, compose_file, options.via, run_dir, client) for sandbox in built]
        return Emitted({**files.files, **client.files(entries)}, executable=files.executable)


def _srt_entries(plan: Plan, built: Sequence[EffectiveSandbox]) -> list[Entry]:
    """VS Code's entries, each the server itself under VS Code's sandbox; one sandbox block for all, or none built."""
    entries = []
    first: tuple[str, dict[str, object]] | None = None
    for sandbox in built:
        block, cwd = vscode_sandbox.sandbox_block(sandbox)
        if first is None:
            first = (sandbox.name, block)
        elif block != first[1]:
            raise Refused("mounts", sandbox.path, f"VS Code has one sandbox block per mcp.json, and servers {first[0]} and {sandbox.name} need "
                          "different ones: build them into separate workspaces (one spec each)")
        words = vscode_sandbox.command(sandbox)
        entries.append(dataclasses.replace(_entry(plan, sandbox, words[0], words[1:]), cwd=cwd, sandbox=block))
    return entries


def _refuse_expanded(client: Client, path: str, what: str) -> None:
    if client.expands and "${" in path:
        raise Refused("process-policy", (), f"{client.name} expands '${{...}}' in a server's arguments: {what} {path!r} would not reach it as it is (move or rename it)")


def _in_compose_dir(emitted: Emitted) -> Emitted:
    return Emitted({f"{COMPOSE_DIR}/{name}": text for name, text in emitted.files.items()}, executable={f"{COMPOSE_DIR}/{name}" for name in emitted.executable})


def _compose_call_policy(client: Client) -> tuple[Level, str]:
    if client.approvals:
        return "partial", (f"no `mcpspec run` relays MCP under compose: {client.name}'s own permissions ask before the tools that need approval, "
                           "and nothing hides unlisted tools or enforces rate limits and call timeouts")
    return "none", "no `mcpspec run` relays MCP under compose: no approval, tool allowlist, rate limit or call timeout is enforced"


def _entry(plan: Plan, sandbox: EffectiveSandbox, command: str, args: Sequence[str], env: tuple[tuple[str, str], ...] = ()) -> Entry:
    modes = {name: approval_mode(plan, tool) for name, tool in sandbox.tools.items()}
    return Entry(
        name=sandbox.name,
        args=tuple(args),
        command=command,
        env=env,
        allow=tuple(sorted(name for name, mode in modes.items() if mode is None)),
        ask=tuple(sorted(name for name, mode in modes.items() if mode == "always")),
        listed=tuple(sorted(sandbox.tools)) if sandbox.unlisted_tools == "deny" and sandbox.tools else None,
    )


def _run_entry(plan: Plan, sandbox: EffectiveSandbox, spec: str) -> Entry:
    args = ["run", spec, sandbox.name]
    if sandbox.agents:
        args += ["--agent", sandbox.agents[0]]
    return _entry(plan, sandbox, "mcpspec", args)


def compose_project(plan: Plan, sandbox: EffectiveSandbox, client: Client) -> str:
    """The compose project of a client's runs: one per project, agent and client, so runs of one client share its proxies."""
    agent = sandbox.agents[0] if sandbox.agents else "agent"
    return re.sub(r"[^a-z0-9_-]+", "-", f"mcpspec-{plan.project}-{agent}-{client.name}".lower()).strip("-")


def run_directory(sandbox: EffectiveSandbox, client: Client) -> str | None:
    """The fixed directory whose subdirectories are the server's workspace dirs (MCPSPEC_RUN_DIR), or None when it has none on disk."""
    for mount in sandbox.mounts:
        if mount.kind == "workspace" and mount.location.endswith("/" + mount.source):
            agent = sandbox.agents[0] if sandbox.agents else "agent"
            return mount.location[: -len(mount.source) - 1].replace(AGENT_TOKEN, agent).replace(RUN_TOKEN, client.name)
    return None


def _compose_entry(plan: Plan, sandbox: EffectiveSandbox, compose_file: str, via: str, run_dir: str | None, client: Client) -> Entry:
    program, head = ENGINES[via]
    args: tuple[str, ...] = (*head, "--project-name", compose_project(plan, sandbox, client), "--file", compose_file, "run", "--rm", "-T", sandbox.name)
    if any(from_environment(grant) for grant in compose_delivered(sandbox)):
        # Compose reads these from the wrapper's files (podman-compose refuses an environment: source): run it through the wrapper.
        program, args = f"{compose_file.rsplit('/', 1)[0]}/{WRAPPER_FILE}", (program, *args)
    env: tuple[tuple[str, str], ...] = (("MCPSPEC_RUN_DIR", run_dir),) if run_dir else ()
    if via == "podman-compose":  # it reads the services' seccomp profiles (./NAME.seccomp.json) from this directory
        env += (("COMPOSE_PROJECT_DIR", compose_file.rsplit("/", 1)[0]),)
    return _entry(plan, sandbox, program, args, env)


TARGET = ClientTarget()
