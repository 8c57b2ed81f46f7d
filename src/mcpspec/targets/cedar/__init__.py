"""The cedar target: Cedar policies for the MCP gateways that take them (ToolHive, Docker Sandboxes).

A gateway decides MCP requests (a tool call, a prompt, a resource read); it never sees what the
server's process reaches. So the policies hold the spec's call policy only, as far as Cedar can
state it, and none of its boundaries: each is a TG001, unless ``--sandbox TARGET`` writes that
target's build of the same spec beside them, whose matrix then holds every other control. The policies never grant more than `mcpspec run` would: a tool the spec does not list is
forbidden (Docker Sandboxes asks a person where the spec allows unlisted tools), a call that needs
approval is `@requireApproval` in Docker Sandboxes and denied in ToolHive (it cannot ask), and a
tool whose argument rules Cedar cannot state exactly is denied in both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.base import CONTROLS, BuildOptions, Capability, Emitted, Gap, Overrides, Target
from mcpspec.targets.cedar import docker, toolhive
from mcpspec.targets.cedar.rules import FALSE

_TESTS = "tests/test_target_cedar.py::"

USAGE = """
## Running the output

    mcpspec build mcp-sandbox.yaml --target cedar --sandbox compose --proxy-image IMAGE --out build/cedar

The build writes two gateways' policies from the spec's tools, approvals and argument rules:

- `toolhive/SERVER.authz.json`: ToolHive's authorization config (`cedarv1`) for one server:
  `thv run --authz-config build/cedar/toolhive/SERVER.authz.json ...`. ToolHive evaluates it on
  `tools/call`, `prompts/get` and `resources/read` and filters listings by it (asking without
  arguments: a tool allowed only by an argument rule is left out of `tools/list`, its calls still
  decided by their arguments).
- `docker-sandboxes/mcp-policy.cedar`: one Docker Sandboxes organization MCP policy for every server,
  scoped by `resource in MCP::Server::"SERVER"`; register each server under its name in the spec.
  Paste it into the organization's MCP access policy.

Beside each, a `.cedarschema.json` states the entity model the policies are written against (from
the gateways' documentation and source: ToolHive's `Client`, `Tool`, `Prompt`, `Resource`; Docker's
`MCP` namespace), so `cedar validate --schema ... --policies ...` checks them; the tests validate
every generated policy set with cedarpy and evaluate calls with `cedarpy.is_authorized`. No real
gateway runs here: the call-policy row below is about the policies' meaning under Cedar.

What the policies say, per server:

- a tool the spec lists and allows: permitted; a tool that needs approval (`approval`, or
  `approvals.require` for its effects): `@requireApproval` in Docker Sandboxes (asked at every call,
  `per-session` too), forbidden in ToolHive, which cannot ask a person;
- a tool the spec does not list: forbidden (`unlisted_tools: allow`: asked in Docker Sandboxes,
  forbidden in ToolHive); a name that differs from a listed one in case, Unicode form or a trailing
  space is another name, so it is unlisted;
- argument rules (`when`, `otherwise`) compile where Cedar states them exactly: a string argument
  equal to a string that NFKC leaves as it is (case-sensitive, not a path), or a boolean equal to a
  boolean, combined with `all`, `any` and `not`, in `mcpspec run`'s order. A prefix, glob, regex,
  range, number, path or case-insensitive test cannot be (`like` has no length bound, and `mcpspec
  run` reads NFKC forms and paths): the tool is then forbidden in both, reported as TG003. An argument
  that is missing or of another type never satisfies an allowing condition, and a call whose argument
  may read (after NFKC) as a refused value is never allowed, so Cedar is at times stricter than
  `mcpspec run`. Docker's gateway passes arguments of local stdio servers only: a conditional permit
  of an HTTP server never matches;
- prompts and resources: the spec grants none by name, so none is read through either gateway
  (ToolHive: explicit forbids; Docker: default deny), nor are Docker's gateway meta-tools
  (code-mode, mcp-exec) or server registrations permitted: add your own `register` permits, scoped
  by `resource.identityURL`.

Rate limits, call timeouts and tool-list pinning (mcp-sandbox.lock) are `mcpspec run`'s: neither
gateway's Cedar can state them.

## The sandbox beside the policies

A gateway decides MCP requests; it never sees what the server's process reaches. With
`--sandbox bwrap|systemd|compose|k8s` (and that target's options, such as `--proxy-image`) the build
also writes that target's build of the same spec under `OUT/<target>/`, and every control but the
call policy is that target's, at its level (its README). The levels hold where the gateway reaches
the server through that build: Docker Sandboxes starts a local stdio server by the command you
register (`sbx mcp add SERVER -- <the server's stdio command from that build>`, such as the bwrap
launcher or `docker compose --file OUT/compose/compose.yaml run --rm -T SERVER`); ToolHive fronts only
an HTTP server it did not start (`thv run http://HOST:PORT/mcp --authz-config ...`). A stdio server
that ToolHive starts itself runs in ToolHive's own container, whose boundaries are ToolHive's
permission profile, not this build's.

Without `--sandbox` no boundary of the spec (mounts, egress, secrets, identity, limits) is this
build's: each is TG001, which stops it unless the spec waives it where something else holds that
boundary (`waivers: [{rule: TG001, at: servers.SERVER, reason: ..., expires: ...}]`).
"""

_NOT_A_SANDBOX = (
    "Cedar decides MCP requests at a gateway (tools/call, prompts/get, resources/read); it never sees what the server's process "
    "reaches, so this build enforces no {what}: give --sandbox (bwrap, systemd, compose or k8s) to build the sandbox beside the policies"
)
_WHAT = {
    "mounts": "mount", "hidden-paths": "hidden path", "identity": "uid or capability limit", "env": "environment limit",
    "secrets": "secret delivery", "egress-deny": "egress limit", "egress-allowlist": "egress allowlist",
    "metadata-blocking": "address blocking", "listeners": "listener limit", "memory": "memory limit", "pids": "process limit",
    "cpu": "CPU limit", "lifetime": "lifetime", "syscall-filter": "syscall filter", "idle-timeout": "idle timeout",
    "package-install": "package-install policy", "process-policy": "command allow or deny list",
    "workspace-lifecycle": "workspace reset", "audit-log": "audit log (the gateways' own audit logs are theirs to configure)",
    "image": "image pinning",
}

CAPABILITIES: dict[str, Capability] = {
    control.id: Capability("none", _NOT_A_SANDBOX.replace("{what}", _WHAT[control.id])) for control in CONTROLS if control.id != "call-policy"
}
CAPABILITIES["call-policy"] = Capability(
    "partial",
    "the tool allowlist (a tool the spec does not list is forbidden, near-miss names included), approvals (Docker Sandboxes: "
    "@requireApproval; ToolHive cannot ask, so those calls are denied) and the argument rules Cedar states exactly (string and "
    "boolean equality; a tool with any other rule is denied); prompts and resources are denied. Partial: rate limits, call "
    "timeouts and lock pinning are not stated, and no real gateway runs here: the tests evaluate the policies with cedarpy",
    (_TESTS + "test_every_example_call_gets_the_verdict_mcpspec_run_gives_or_a_narrower_one",
     _TESTS + "test_generated_specs_never_get_a_wider_verdict_than_mcpspec_run",
     _TESTS + "test_a_near_miss_tool_name_is_denied",
     _TESTS + "test_argument_rules_allow_only_what_every_reading_allows",
     _TESTS + "test_hostile_names_and_values_stay_inside_their_literals",
     _TESTS + "test_a_hostile_tool_or_server_name_names_only_itself",
     "tests/test_redteam_codex_cedar.py::test_a_later_allowed_string_that_may_read_as_a_refused_one_is_not_allowed",
     "tests/test_redteam_codex_cedar.py::test_an_allowed_string_with_nul_is_never_allowed"),
)


# The targets whose build may start the servers the gateway fronts (--sandbox), and the options they may take.
SANDBOXES = ("bwrap", "systemd", "compose", "k8s")
_SANDBOX_OPTIONS = frozenset({"proxy_image", "egress", "secret_store", "pod_pids_limit", "seccomp_localhost"})


def paired(options: BuildOptions) -> tuple[Target, BuildOptions] | None:
    """The sandbox target of a --sandbox build and the options it is given (every one but --sandbox)."""
    if options.sandbox is None:
        return None
    return get_target(options.sandbox), dataclasses.replace(options, sandbox=None)


class CedarTarget:
    name = "cedar"
    description = "Cedar policies for MCP gateways: ToolHive's authorization config and Docker Sandboxes' MCP policy"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset({"sandbox", *_SANDBOX_OPTIONS})

    def check_options(self, options: BuildOptions) -> None:
        if options.sandbox is None:
            given = sorted(set(options.given()) & _SANDBOX_OPTIONS)
            if given:
                raise ValueError(f"--{given[0].replace('_', '-')} is for the sandbox built beside the policies: give --sandbox ({', '.join(SANDBOXES)})")
            return
        if options.sandbox not in SANDBOXES:
            raise ValueError(f"--sandbox must be one of {', '.join(SANDBOXES)}")
        found = paired(options)
        assert found is not None
        skeleton.refuse_unused(*found)

    def secret_source(self, options: BuildOptions) -> str:
        """Secrets are the sandbox's business: its target's sources (none without --sandbox)."""
        found = paired(options)
        return skeleton.source_target(*found) if found is not None else self.name

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        gaps: list[Gap] = []
        overrides: Overrides = {}
        found = paired(options)
        if found is not None:
            target, given = found
            sandbox_gaps, overrides = target.server_gaps(plan, sandbox, given)
            # The gateway holds the call policy; every other control is the sandbox's, as its own matrix says.
            gaps += [gap for gap in sandbox_gaps if gap.control != "call-policy"]
            overrides.pop("call-policy", None)
            for control, capability in target.capabilities.items():
                if control != "call-policy":
                    overrides.setdefault(control, (capability.level, f"through the {target.name} build under {target.name}/: {capability.how}"))
        tools = (*sandbox.path, "tools")
        theirs = {decided.name: decided for decided in toolhive.server_policy(plan, sandbox).tools}
        for decided in docker.server_policy(plan, sandbox).tools:
            at = (*tools, decided.name, "when")
            if decided.not_exact is not None:
                gaps.append(Gap("call-policy", "partial", at,
                                f"Cedar cannot state tool {decided.name}'s argument rules exactly ({decided.not_exact}): both gateways deny its calls"))
            elif theirs[decided.name].not_exact is not None:
                gaps.append(Gap("call-policy", "partial", at,
                                f"ToolHive cannot be told tool {decided.name}'s argument rules exactly ({theirs[decided.name].not_exact}): it denies its calls"))
        held = [decided.name for decided in theirs.values() if decided.approve != FALSE]
        if sandbox.unlisted_tools == "allow":
            held.append("every tool the spec does not list")
        if held:
            gaps.append(Gap("call-policy", "partial", tools,
                            f"ToolHive cannot ask a person: the calls that need approval are denied there ({', '.join(held)}); Docker Sandboxes asks"))
        if isinstance(sandbox.transport, HttpTransport) and any(tool.when for tool in sandbox.tools.values()):
            gaps.append(Gap("call-policy", "partial", tools,
                            "Docker's gateway passes no arguments of an HTTP server to Cedar: a call allowed by an argument rule is denied there"))
        return gaps, overrides

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        found = paired(options)
        emitted = _under(found[0].name, found[0].server_files(plan, sandbox, found[1])) if found is not None else Emitted()
        policy = toolhive.server_policy(plan, sandbox)
        emitted.files.update({f"toolhive/{sandbox.name}.authz.json": toolhive.config(policy),
                              f"toolhive/{sandbox.name}.cedarschema.json": toolhive.schema(policy)})
        return emitted

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        found = paired(options)
        emitted = _under(found[0].name, found[0].project_files(plan, built, found[1])) if found is not None else Emitted()
        if built:
            policies = [docker.server_policy(plan, sandbox) for sandbox in built]
            emitted.files.update({docker.POLICY_FILE: docker.policy_text(policies), docker.SCHEMA_FILE: docker.schema(policies)})
        return emitted


def _under(directory: str, emitted: Emitted) -> Emitted:
    return Emitted({f"{directory}/{name}": text for name, text in emitted.files.items()}, {f"{directory}/{name}" for name in emitted.executable})


TARGET = CedarTarget()
