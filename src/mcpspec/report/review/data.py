"""Everything the reviewer's report shows, gathered once from a lint run, the Plan and its graph.

The renderers (HTML, Markdown) only lay out what is here: every value is final text or
a number, already masked by :func:`mcpspec.redact.redact` where it comes from the spec.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcpspec import __version__
from mcpspec.analysis.graph import TrustGraph, blast_radius, build
from mcpspec.conditions.describe import rules_text
from mcpspec.diagnostics import format_path, parse_path
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan, SecretGrant
from mcpspec.redact import redact
from mcpspec.report.graph.view_model import GraphView, view
from mcpspec.report.model import FileLint
from mcpspec.report.review.reach import egress_reach
from mcpspec.report.review.values import duration, number, plural, size
from mcpspec.rules import facts
from mcpspec.rules.base import DEFAULT_DOCS_URL
from mcpspec.rules.engine import LEVELS, Result
from mcpspec.rules.registry import find

# A server's tier is the worst severity among the findings that involve it.
TIERS = ("critical", "high", "medium", "low", "minimal")
EXCERPT_CONTEXT = 2
EXCERPT_MAX_LINES = 9


@dataclass(frozen=True)
class ExcerptLine:
    number: int
    text: str
    hit: bool


@dataclass(frozen=True)
class HopView:
    line: int
    column: int
    path: str
    note: str


@dataclass(frozen=True)
class FindingView:
    """One lint result as the report shows it."""

    anchor: str
    code: str
    slug: str
    severity: str
    file: str
    line: int
    column: int
    path: str
    message: str
    summary: str
    doc_file: str  # docs/rules/<doc_file>, '' for spec errors
    excerpt: tuple[ExcerptLine, ...]
    hops: tuple[HopView, ...]
    servers: tuple[str, ...]
    suppression: str | None = None  # "waiver: reason", "inline: reason", "baseline: ..."


@dataclass(frozen=True)
class RuleDoc:
    id: str
    slug: str
    summary: str
    severity: str
    category: str
    doc: str
    doc_file: str


@dataclass(frozen=True)
class MountRow:
    source: str
    target: str
    mode: str
    kind: str
    note: str


@dataclass(frozen=True)
class SecretRow:
    name: str
    provider: str
    scopes: str
    ttl: str
    form: str


@dataclass(frozen=True)
class ToolRow:
    name: str
    description: str
    effects: str
    approval: str


@dataclass(frozen=True)
class ControlRow:
    control: str
    kind: str  # boundary | policy
    level: str  # full | partial | none
    note: str


@dataclass(frozen=True)
class Blast:
    secrets: tuple[str, ...]
    paths: tuple[str, ...]
    destinations: tuple[str, ...]
    agents: tuple[str, ...]
    servers: tuple[str, ...]  # "name (via a -> b)"

    @property
    def empty(self) -> bool:
        return not (self.secrets or self.paths or self.destinations or self.agents or self.servers)


@dataclass
class ServerCard:
    name: str
    anchor: str
    description: str
    kind: str
    trust: str
    placement: str
    runs: str
    agents: tuple[str, ...]
    tier: str
    reason: str
    traits: tuple[str, ...]
    counts: dict[str, int]
    mounts: list[MountRow]
    secrets: list[SecretRow]
    egress: list[tuple[str, str]]
    process: list[tuple[str, str]]
    lifecycle: list[tuple[str, str]]
    logging: list[tuple[str, str]]
    tools: list[ToolRow]
    unlisted_tools: str
    blast: Blast
    findings: list[FindingView] = field(default_factory=list)
    enforcement: list[ControlRow] | None = None
    enforcement_note: str = ""


@dataclass(frozen=True)
class AgentRow:
    name: str
    description: str
    servers: tuple[str, ...]


@dataclass(frozen=True)
class WaiverRow:
    rule: str
    at: str
    reason: str
    expires: str
    status: str  # active | expired | unused
    covers: int


@dataclass
class Review:
    """The whole report."""

    file: str
    title: str
    project: str
    description: str
    generator: str
    today: str
    fail_on: str
    failed: bool
    errors: list[FindingView] = field(default_factory=list)
    findings: list[FindingView] = field(default_factory=list)
    suppressed: list[FindingView] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    servers: list[ServerCard] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
    waivers: list[WaiverRow] = field(default_factory=list)
    rules: list[RuleDoc] = field(default_factory=list)
    shown: GraphView | None = None
    target: str | None = None
    rule_docs_url: str = DEFAULT_DOCS_URL
    boundary: str | None = None  # the boundary file the excesses are measured against
    excesses: list[FindingView] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def tiers(self) -> dict[str, int]:
        counted = {tier: 0 for tier in TIERS}
        for card in self.servers:
            counted[card.tier] += 1
        return {tier: n for tier, n in counted.items() if n}


def review(
    lint: FileLint,
    plan: Plan | None,
    *,
    fail_on: str,
    failed: bool,
    today: datetime.date,
    target: str | None = None,
    rule_docs_url: str = DEFAULT_DOCS_URL,
) -> Review:
    """The report of one file: ``lint`` as `mcpspec lint` found it, ``plan`` None when the spec is invalid."""
    lines = lint.text.splitlines() if lint.text is not None else []
    title = f"{plan.project}: sandbox policy review" if plan is not None else f"{lint.file}: the spec has errors"
    out = Review(
        file=lint.file,
        title=redact(title),
        project=redact(plan.project) if plan is not None else "",
        description=redact(plan.spec.description) if plan is not None else "",
        generator=f"mcpspec {__version__}",
        today=today.isoformat(),
        fail_on=fail_on,
        failed=failed,
        target=target,
        rule_docs_url=rule_docs_url,
    )
    if plan is None:
        out.errors = [finding_view(r, n, lines, ()) for n, r in enumerate(lint.results)]
        return out
    graph = build(plan)
    out.shown = view(graph, lint.results)
    attributed = _Attribution(plan, out.shown)
    for number_, result in enumerate(lint.results):
        shown = finding_view(result, number_, lines, attributed.servers(result))
        (out.suppressed if result.suppression is not None else out.findings).append(shown)
    # Most severe first: a reviewer reads the criticals before a low at line 3.
    out.findings.sort(key=_severity_first)
    out.suppressed.sort(key=_severity_first)
    counted: dict[str, int] = {level: 0 for level in LEVELS}
    for item in out.findings:
        counted[item.severity] += 1
    out.counts = {level: n for level, n in counted.items() if n}
    out.agents = [AgentRow(redact(name), redact(plan.spec.agents[name].description), tuple(servers)) for name, servers in sorted(plan.agents.items())]
    enforcement = _enforcement(plan, target) if target is not None else {}
    by_server: dict[str, list[FindingView]] = {}
    for item in out.findings:
        for name in item.servers:
            by_server.setdefault(name, []).append(item)
    out.servers = [_card(plan, graph, number_, sandbox, by_server.get(sandbox.name, []), enforcement, target) for number_, sandbox in enumerate(plan.servers.values())]
    out.servers.sort(key=lambda card: (TIERS.index(card.tier), -card.counts.get(card.tier, 0), card.name))
    out.waivers = _waivers(plan, lint.results, today)
    out.rules = _rules(item.code for item in [*out.findings, *out.suppressed])
    return out


# --- findings ---


def _severity_first(item: FindingView) -> tuple[int, str, int, int, str]:
    return (LEVELS.index(item.severity), item.file, item.line, item.column, item.code)


def finding_view(result: Result, index: int, lines: list[str], servers: Iterable[str]) -> FindingView:
    rule = find(result.code) if result.severity != "error" else None
    suppression = None
    if result.suppression is not None:
        suppression = f"{result.suppression.kind}: {redact(result.suppression.justification)}"
    return FindingView(
        anchor=f"finding-{index}",
        code=result.code,
        slug=result.slug,
        severity=result.severity,
        file=result.file,
        line=result.span.line,
        column=result.span.col,
        path=redact(format_path(result.path)),
        message=result.message,
        summary=rule.summary if rule is not None else "spec error: the file is not a valid spec",
        doc_file=f"{rule.id}-{rule.slug}.md" if rule is not None else "",
        excerpt=_excerpt(lines, result.span.line, result.span.end_line),
        hops=tuple(HopView(hop.span.line, hop.span.col, redact(format_path(hop.path)), hop.note) for hop in result.related),
        servers=tuple(servers),
        suppression=suppression,
    )


def _excerpt(lines: list[str], first: int, last: int) -> tuple[ExcerptLine, ...]:
    if not 0 < first <= len(lines):
        return ()
    last = max(first, min(last, len(lines), first + EXCERPT_MAX_LINES - 1 - 2 * EXCERPT_CONTEXT))
    start = max(1, first - EXCERPT_CONTEXT)
    end = min(len(lines), last + EXCERPT_CONTEXT)
    return tuple(ExcerptLine(n, redact(lines[n - 1].expandtabs(2)), first <= n <= last) for n in range(start, end + 1))


def _rules(codes: Iterable[str]) -> list[RuleDoc]:
    out: list[RuleDoc] = []
    for code in sorted(set(codes)):
        rule = find(code)
        if rule is not None:
            out.append(RuleDoc(rule.id, rule.slug, rule.summary, rule.severity, rule.category, rule.doc.strip(), f"{rule.id}-{rule.slug}.md"))
    return out


class _Attribution:
    """Which servers a finding is about: the servers, tools and secrets its places name, and the
    servers that inherit a ``defaults`` value it points at."""

    def __init__(self, plan: Plan, shown: GraphView) -> None:
        self.plan = plan
        self.order = {name: number for number, name in enumerate(plan.servers)}
        self.by_result: dict[int, set[str]] = {}
        holders: dict[str, list[str]] = {}
        for edge in shown.graph.edges:
            if edge.kind == "uses-secret":
                holders.setdefault(edge.target, []).append(edge.source[len("server:"):])
        for node_id, results in shown.findings.items():
            names = self._names(node_id, holders)
            for result in results:
                self.by_result.setdefault(id(result), set()).update(names)
        self.inherited: dict[tuple[str | int, ...], set[str]] = {}
        for sandbox in plan.servers.values():
            for origin in sandbox.origins.values():
                if origin and origin[0] == "defaults":
                    self.inherited.setdefault(tuple(origin), set()).add(sandbox.name)

    @staticmethod
    def _names(node_id: str, holders: dict[str, list[str]]) -> list[str]:
        kind, _, rest = node_id.partition(":")
        if kind == "server":
            return [rest]
        if kind == "tool":
            return [rest.partition("/")[0]]
        if kind == "secret":
            return holders.get(node_id, [])
        return []

    def servers(self, result: Result) -> tuple[str, ...]:
        found = set(self.by_result.get(id(result), ()))
        for place in (result.path, *(hop.path for hop in result.related)):
            if len(place) >= 2 and place[0] == "servers" and place[1] in self.plan.servers:
                found.add(str(place[1]))
            if place and place[0] == "defaults":
                inheriting: set[str] = set()
                for origin, names in self.inherited.items():
                    shorter = min(len(origin), len(place))
                    if origin[:shorter] == tuple(place[:shorter]):
                        inheriting |= names
                # A message about a default names the servers it concerns ('a', 'b'): when it does, only those.
                named = {name for name in inheriting if f"'{name}'" in result.message}
                found |= named or inheriting
        return tuple(sorted(found, key=self.order.__getitem__))


# --- servers ---


def _card(plan: Plan, graph: TrustGraph, number_: int, sandbox: EffectiveSandbox, own: list[FindingView], enforcement: dict[str, tuple[list[ControlRow], str]], target: str | None) -> ServerCard:
    counted: dict[str, int] = {}
    for item in own:
        counted[item.severity] = counted.get(item.severity, 0) + 1
    tier, reason = _tier(own)
    rows, note = enforcement.get(sandbox.name, (None, ""))
    if target is not None and rows is None and not note:
        note = f"{target} builds nothing for this server"
    card = ServerCard(
        name=sandbox.name,
        anchor=f"server-{number_}",
        description=redact(sandbox.description),
        kind=sandbox.kind,
        trust=sandbox.trust,
        placement=sandbox.placement,
        runs=_runs(sandbox),
        agents=sandbox.agents,
        tier=tier,
        reason=reason,
        traits=_traits(plan, sandbox),
        counts={level: counted[level] for level in LEVELS if level in counted},
        mounts=[_mount(m) for m in sandbox.mounts],
        secrets=[_secret(plan, g) for g in sandbox.secrets],
        egress=_egress(sandbox),
        process=_process(sandbox),
        lifecycle=_lifecycle(sandbox),
        logging=_logging(sandbox),
        tools=[_tool(plan, name, sandbox) for name in sandbox.tools],
        unlisted_tools=sandbox.unlisted_tools,
        blast=_blast(graph, sandbox.name),
        findings=own,
        enforcement=rows,
        enforcement_note=note,
    )
    return card


def _secret(plan: Plan, grant: SecretGrant) -> SecretRow:
    """A secret's row; ``none`` written on purpose reads differently from nothing written."""
    declared = plan.spec.secrets.get(grant.name)
    scopes = ", ".join(grant.scopes) or ("none (declared)" if declared is not None and declared.scopes == "none" else "not given")
    ttl = duration(grant.ttl, "never expires (declared)" if declared is not None and declared.ttl == "none" else "not given")
    form = f"env {grant.env}" if grant.env else f"file {grant.file}"
    own = "".join(f", {target}: {source.provider}" for target, source in grant.sources.items())  # targets that read their own source
    return SecretRow(redact(grant.name), grant.provider + own, redact(scopes), ttl, redact(form))


def _tier(own: list[FindingView]) -> tuple[str, str]:
    if not own:
        return "minimal", "no finding involves this server"
    worst = min((item.severity for item in own), key=LEVELS.index)
    if worst in ("error", "info"):
        return ("minimal" if worst == "info" else "critical"), f"{plural(len(own), 'finding')}, none above info" if worst == "info" else "spec errors"
    top = [item for item in own if item.severity == worst]
    # Attack paths first, then what concerns this server alone before what concerns many.
    top.sort(key=lambda item: (not item.code.startswith("GR"), len(item.servers), item.code))
    rules = list(dict.fromkeys(f"{item.code} {item.slug}" for item in top))
    shown = ", ".join(rules[:3]) + (f" and {len(rules) - 3} more" if len(rules) > 3 else "")
    return worst, f"{len(top)} {worst}: {shown}"


def _runs(sandbox: EffectiveSandbox) -> str:
    parts: list[str] = []
    if sandbox.image:
        parts.append(f"image {sandbox.image}")
    if sandbox.package is not None:
        version = sandbox.package.version or "newest (unpinned)"
        parts.append(f"{sandbox.package.registry} package {sandbox.package.name} {version}")
    if sandbox.command:
        parts.append(("shell: " if sandbox.command_is_shell else "command: ") + " ".join(sandbox.command))
    transport = sandbox.transport
    url = getattr(transport, "url", None)
    parts.append(f"transport {transport.type}" + (f" at {url}" if url else ""))
    return redact("; ".join(parts))


def _traits(plan: Plan, sandbox: EffectiveSandbox) -> tuple[str, ...]:
    """What the server can do, in a few words each (the facts the graph rules combine)."""
    out: list[str] = []
    if facts.executes_code(sandbox):
        out.append("runs code")
    if facts.reads_untrusted(sandbox):
        out.append("reads untrusted content")
    if facts.reads_private(sandbox):
        out.append("reads private data")
    if sandbox.secrets:
        out.append(f"holds {plural(len(sandbox.secrets), 'secret')}")
    if sandbox.runs_here and facts.egress_open(sandbox):
        out.append("open egress")
    elif sandbox.egress.allow:
        out.append(egress_reach(sandbox.egress.allow))
    writable = [m for m in facts.host_mounts(sandbox) if m.writable] if sandbox.runs_here else []
    if writable:
        out.append(f"writes {plural(len(writable), 'host path')}")
    if sandbox.runs_here and sandbox.identity.uid == 0:
        out.append("runs as root")
    if sandbox.placement == "agent":
        out.append("shares the agent's sandbox")
    if sandbox.placement == "external":
        out.append("runs elsewhere")
    sensitive = [name for name, tool in sandbox.tools.items() if tool.effects and not facts.approval_gated(plan, tool) and set(tool.effects) & set(plan.approvals.require)]
    if sensitive:
        out.append(f"{plural(len(sensitive), 'sensitive tool')} without approval")
    return tuple(out)


def _mount(mount: EffectiveMount) -> MountRow:
    note = ""
    if mount.tmpfs:
        note = f"tmpfs {size(mount.size)}"
    elif mount.kind == "workspace":
        note = "workspace dir"
    source = mount.location if mount.kind in ("host", "home") else f"workspace.{mount.source}"
    return MountRow(redact(source), redact(mount.target), mount.mode, mount.kind, note)


def _egress(sandbox: EffectiveSandbox) -> list[tuple[str, str]]:
    if not sandbox.runs_here:
        return [("egress", "not sandboxed by mcpspec (runs elsewhere)")]
    egress = sandbox.egress
    rows: list[tuple[str, str]] = [("default", egress.default), ("via", egress.via)]
    rows.append(("allow", ", ".join(d.text for d in egress.allow) or "nothing"))
    if egress.deny:
        rows.append(("deny", ", ".join(d.text for d in egress.deny)))
    return [(k, redact(v)) for k, v in rows]


def _process(sandbox: EffectiveSandbox) -> list[tuple[str, str]]:
    process = sandbox.process
    install = process.package_install
    background = process.background
    return [
        ("allow", "anything (no process policy)" if process.allow is None else (redact(", ".join(process.allow)) or "nothing but the server")),
        *([("deny", redact(", ".join(process.deny)))] if process.deny else []),
        ("package install", ("allowed from " + (redact(", ".join(install.registries)) or "any registry") + f", lockfile {install.lockfile}") if install.allowed else "not allowed"),
        ("listeners", "allowed" if process.listeners else "not allowed"),
        ("background jobs", f"allowed (max {number(background.max_jobs)}, runtime {duration(background.max_runtime)})" if background.allowed else "not allowed"),
        ("max runtime", duration(process.max_runtime)),
        ("identity", f"uid {sandbox.identity.uid}, gid {sandbox.identity.gid}"),
        ("resources", f"memory {size(sandbox.resources.memory)}, cpus {number(sandbox.resources.cpus)}, pids {number(sandbox.resources.pids)}"),
        ("root filesystem", "read-only" if sandbox.read_only_root else "writable"),
        ("environment", "inherit " + (sandbox.env.inherit if isinstance(sandbox.env.inherit, str) else ", ".join(sandbox.env.inherit))
         + (f"; sets {', '.join(sorted(sandbox.env.set))}" if sandbox.env.set else "")),
    ]


def _lifecycle(sandbox: EffectiveSandbox) -> list[tuple[str, str]]:
    life = sandbox.lifecycle
    teardown = life.teardown
    done = [name for name, on in (("kill processes", teardown.kill_processes), ("remove workspace", teardown.remove_workspace), ("revoke secrets", teardown.revoke_secrets)) if on]
    return [
        ("mode", life.mode),
        ("idle timeout", duration(life.idle_timeout)),
        ("max lifetime", duration(life.max_lifetime)),
        ("pause", f"allowed, at most {duration(life.pause.max_paused)}" if life.pause.allowed else "not allowed"),
        ("teardown", (", ".join(done) or "nothing") + f"; copy out {teardown.copy_out}"),
        ("call limits", f"{number(sandbox.limits.requests_per_minute)} calls/min, timeout {duration(sandbox.limits.call_timeout)}"),
    ]


def _logging(sandbox: EffectiveSandbox) -> list[tuple[str, str]]:
    log = sandbox.logging
    return [
        ("audit", f"on, to {redact(str(log.sink))}" if log.audit else "off"),
        ("records", ", ".join(log.record) or "nothing"),
        ("redaction", "on" if log.redact else "off"),
        ("raw prompts", "logged" if log.raw_prompts else "not logged"),
        ("full output", "logged" if log.full_output else "not logged"),
    ]


def _tool(plan: Plan, name: str, sandbox: EffectiveSandbox) -> ToolRow:
    tool = sandbox.tools[name]
    mode = facts.approval_mode(plan, tool)
    approval = {"always": "every call", "per-session": "once per session", None: "none"}[mode]
    if tool.approval is None and mode is not None:
        approval += " (approvals.require)"
    if tool.when:  # argument rules decide first: the reviewer reads them with the approval they override
        approval += "; argument rules: " + "; ".join(rules_text(tool.when, tool.otherwise))
    return ToolRow(redact(name), redact(tool.description), ", ".join(tool.effects) or "none declared", redact(approval))


def _blast(graph: TrustGraph, server: str) -> Blast:
    radius = blast_radius(graph, server)
    return Blast(
        secrets=tuple(redact(item["name"]) for item in radius["secrets"]),
        paths=tuple(redact(f"{item['host_path']} ({item['mode']})") for item in radius["paths"]),
        destinations=tuple(redact(item["destination"]) for item in radius["destinations"]),
        agents=tuple(redact(item["agent"]) for item in radius["agents"]),
        servers=tuple(
            redact(item["server"] + (" via " + " → ".join(hop["note"] for hop in item["via"]) if item["via"] else "")) for item in radius["servers"]
        ),
    )


# --- waivers and targets ---


def _waivers(plan: Plan, results: list[Result], today: datetime.date) -> list[WaiverRow]:
    rows: list[WaiverRow] = []
    for waiver in plan.waivers:
        rule = find(waiver.rule)
        at = parse_path(waiver.at)
        covers = sum(
            1
            for r in results
            if r.suppression is not None and r.suppression.kind == "waiver" and rule is not None and r.code == rule.id and r.path[: len(at)] == at
        )
        status = "expired" if waiver.expires < today else ("active" if covers else "unused")
        rows.append(WaiverRow(redact(waiver.rule), redact(waiver.at), redact(waiver.reason), waiver.expires.isoformat(), status, covers))
    return rows


def _enforcement(plan: Plan, target: str) -> dict[str, tuple[list[ControlRow], str]]:
    """server -> (the level the target gives each control the server asks for, a note)."""
    from mcpspec.targets import get_target
    from mcpspec.targets.base import CONTROL_BY_ID, CONTROLS
    from mcpspec.targets.skeleton import build as build_target

    chosen = get_target(target)
    output = build_target(chosen, plan)
    gaps: dict[tuple[str, str], list[str]] = {}
    refused: dict[str, str] = {}
    for gap in output.gaps:
        gaps.setdefault((gap.server, gap.control), []).append(gap.message)
        if gap.unrepresentable:
            refused[gap.server] = gap.message
    out: dict[str, tuple[list[ControlRow], str]] = {}
    for name, sandbox in plan.servers.items():
        levels = output.enforcement.get(name)
        if levels is None:
            note = "runs elsewhere (placement: external): the target enforces nothing" if not sandbox.runs_here else f"not built: {refused.get(name, 'refused by the target')}"
            out[name] = ([], redact(note))
            continue
        rows = []
        for control in CONTROLS:
            if control.id not in levels:
                continue
            messages = gaps.get((name, control.id))
            note = "; ".join(dict.fromkeys(messages)) if messages else chosen.capabilities[control.id].how
            rows.append(ControlRow(CONTROL_BY_ID[control.id].title, control.kind, levels[control.id], redact(note)))
        out[name] = (rows, "")
    return out
