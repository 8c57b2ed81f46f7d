"""Build one spec for one target: emit files, turn gaps into findings, add the manifest.

Gaps become findings of the TG rules, positioned like lint findings and
suppressible the same way (a waiver or an inline ``# mcpspec: ignore[TG...]``).
The same gap on several servers is one finding that names them all.

The risk rules run too, as lint runs them (the same options, waivers and
suppressions): a finding at or above ``fail_on`` blocks the build, whichever
kind it is, and a blocked build is never written.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field, replace

from mcpspec import __version__
from mcpspec.diagnostics import SpecPath, format_path
from mcpspec.ir.plan import Plan
from mcpspec.redact import redact
from mcpspec.report.model import FAIL_ORDER
from mcpspec.rules.engine import Result, place_order
from mcpspec.rules.pipeline import LintOptions, build_only, lint_plan
from mcpspec.rules.registry import find
from mcpspec.rules.suppress import apply_suppressions
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.base import CONTROL_BY_ID, CONTROLS, BuildOptions, BuildOutput, Gap
from mcpspec.targets.common import spec_name

MANIFEST = ".mcpspec-build.json"


@dataclass
class Build:
    target: str
    files: dict[str, str] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)
    results: list[Result] = field(default_factory=list)  # the target's findings (TG rules)
    # Servers with placement: external run elsewhere: nothing is built for them.
    elsewhere: list[str] = field(default_factory=list)
    risks: list[Result] = field(default_factory=list)  # the risk rules' findings, as lint reports them
    fail_on: str = "high"

    @property
    def active(self) -> list[Result]:
        """The target's findings that no waiver or suppression covers."""
        return [r for r in self.results if r.suppression is None]

    @property
    def findings(self) -> list[Result]:
        """Every finding of the build, the risk rules' and the target's, in file order."""
        return sorted([*self.risks, *self.results], key=place_order)

    @property
    def blocked(self) -> bool:
        """Whether an active finding at or above ``fail_on`` stops the build."""
        worst = FAIL_ORDER.index(self.fail_on)
        return any(r.suppression is None and FAIL_ORDER.index(r.severity) <= worst for r in self.findings)


def build_target(text: str) -> str:
    """The target a rule example or fixture is built for: its ``# target: NAME`` first line."""
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if not first.startswith("# target: "):
        raise ValueError("a build-rule example starts with '# target: <name>'")
    return first.removeprefix("# target: ").strip()


def gap_rule(gap: Gap) -> str:
    if gap.unrepresentable:
        return "TG004"
    if CONTROL_BY_ID[gap.control].kind == "policy":
        return "TG003"
    return "TG001" if gap.level == "none" else "TG002"


def build_plan(
    plan: Plan,
    target_name: str,
    today: datetime.date | None = None,
    inline_suppressions: bool = True,
    lint: LintOptions | None = None,
    fail_on: str = "high",
    options: BuildOptions | None = None,
) -> Build:
    """Build ``plan`` for one target; ``lint`` chooses the risk rules (default: all, as lint runs them),
    ``options`` the build inputs that are not in the spec."""
    if fail_on not in FAIL_ORDER[1:]:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ORDER[1:])}")
    given = options if options is not None else BuildOptions()
    output = skeleton.build(get_target(target_name), plan, given)
    results = _results(plan, target_name, output)
    outcome = apply_suppressions(plan, results, today or datetime.date.today(), inline_suppressions)
    elsewhere = [name for name, sandbox in plan.servers.items() if not sandbox.runs_here]
    rules = lint if lint is not None else LintOptions(inline_suppressions=inline_suppressions, today=today or datetime.date.today())
    risks = [r for r in lint_plan(plan, rules) if not build_only(r.code)]
    build = Build(target_name, dict(output.files), set(output.executable), _configured(outcome.results, rules), elsewhere, risks, fail_on)
    build.files[MANIFEST] = _manifest(plan, target_name, output, build, given)
    return build


# Only a waiver in the spec accepts a boundary the target cannot enforce or a value it cannot
# write safely: select, ignore and severity in the config or the flags leave these as they are.
UNCONFIGURABLE = ("TG001", "TG004")


def _configured(results: list[Result], options: LintOptions) -> list[Result]:
    """The target's findings under the rule options lint uses (the config's ignore: [TG003] holds here too)."""
    return [
        r if r.code in UNCONFIGURABLE else replace(r, severity=options.severity.get(r.code, r.severity))
        for r in results
        if r.code in UNCONFIGURABLE or options.enabled(r.code)
    ]


def _results(plan: Plan, target_name: str, output: BuildOutput) -> list[Result]:
    grouped: dict[tuple[str, str, str], list[Gap]] = {}
    for gap in output.gaps:
        grouped.setdefault((gap_rule(gap), gap.control, gap.message), []).append(gap)
    results: list[Result] = []
    for (code, _control, message), gaps in grouped.items():
        rule = find(code)
        assert rule is not None
        servers = _servers(gaps)
        first: SpecPath = gaps[0].path
        text = f"{target_name}: {message}"
        if len(servers) > 6:
            text += f" (servers {', '.join(servers[:5])} and {len(servers) - 5} more)"
        elif len(servers) > 1:
            text += f" (servers {', '.join(servers)})"
        elif servers:
            text += f" (server {servers[0]})"
        results.append(Result(code, rule.slug, rule.severity, plan.file, plan.source.anchor_span(first), first, redact(text)))
    results.sort(key=place_order)
    return results


def _servers(gaps: list[Gap]) -> list[str]:
    names: dict[str, None] = {}
    for gap in gaps:
        if gap.server:
            names[gap.server] = None
        elif len(gap.path) > 1 and gap.path[0] == "servers" and isinstance(gap.path[1], str):
            names[gap.path[1]] = None
    return list(names)


def file_digest(content: str | bytes) -> str:
    """The digest the manifest records of a file's text (as written: UTF-8) or bytes."""
    import hashlib

    return "sha256:" + hashlib.sha256(content.encode("utf-8") if isinstance(content, str) else content).hexdigest()


def _manifest(plan: Plan, target_name: str, output: BuildOutput, build: Build, options: BuildOptions) -> str:
    """What was built and how far each control is enforced per server; --check covers it too."""
    data = {
        "generator": f"mcpspec {__version__}",
        "spec": spec_name(plan),
        "project": plan.project,
        "target": target_name,
        **({"options": options.given()} if options.given() else {}),
        "files": sorted([*output.files, MANIFEST]),
        # What each file held when written: a rebuild removes a file it no longer emits only if nobody has edited it since.
        "digests": {name: file_digest(output.files[name]) for name in sorted(output.files)},
        "servers": {
            server: {
                "placement": sandbox.placement,
                "built": server in output.enforcement,
                "controls": {c.id: output.enforcement[server][c.id] for c in CONTROLS if c.id in output.enforcement.get(server, {})},
            }
            for server, sandbox in plan.servers.items()
        },
        "findings": [
            {"rule": r.code, "path": format_path(r.path), "message": r.message, "suppressed": r.suppression is not None}
            for r in build.results
        ],
    }
    # One line per server and finding: readable in a diff, and json's C encoder stays fast at 10k servers.
    head = {key: value for key, value in data.items() if key not in ("servers", "findings")}
    lines = ["{"] + [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in head.items()]
    servers = data["servers"]
    assert isinstance(servers, dict)
    lines.append('  "servers": {')
    lines += [f"    {json.dumps(name)}: {json.dumps(entry)}," for name, entry in servers.items()]
    if servers:
        lines[-1] = lines[-1].removesuffix(",")
    lines.append("  },")
    lines.append('  "findings": [')
    findings = data["findings"]
    assert isinstance(findings, list)
    lines += [f"    {json.dumps(item)}," for item in findings]
    if findings:
        lines[-1] = lines[-1].removesuffix(",")
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"

