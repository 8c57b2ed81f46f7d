"""The report as GitHub-flavoured Markdown for a pull-request comment.

The same content as the HTML page, folded into ``<details>``; the trust picture is a
Mermaid block (:mod:`mcpspec.report.graph.mermaid`, whose labels are entity-escaped).
Every value from the spec is written with HTML entities for the characters Markdown or
HTML would read (``< > & * _ [ ] ( ) # | ` \\ ~ ! @ :``), so a name can neither add
markup nor mention a person, link an issue or start a link. A comment holds at most
MAX_CHARS characters: past that the report drops the source excerpts, then the picture,
then cuts the rest with a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcpspec.redact import redact
from mcpspec.report.review.data import FindingView, Review, ServerCard
from mcpspec.rules.engine import LEVELS

MAX_CHARS = 65_000
SUMMARY_ROWS = 60  # the riskiest servers; the cards list them all
_SPECIAL = re.compile(r"[&<>*_\[\]()#|`\\~!@:{}$^=+]|\n|\r|www\.")
_TIER_MARK = {"critical": "🟥", "high": "🟧", "medium": "🟨", "low": "🟦", "info": "⬜", "minimal": "🟩", "error": "⛔"}


def text(value: str) -> str:
    """``value`` as inert Markdown text: special characters as entities, line breaks as spaces."""

    def entity(match: re.Match[str]) -> str:
        found = match.group(0)
        if found in ("\n", "\r"):
            return " "
        if found == "www.":
            return "www&#46;"
        return f"&#{ord(found)};"

    return _SPECIAL.sub(entity, redact(value))


def code(value: str) -> str:
    return f"<code>{text(value)}</code>"


def fenced(lines: Iterable[str], language: str = "") -> str:
    """A fenced block longer than any backtick run inside it, so nothing inside can close it."""
    body = "\n".join(redact(line) for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def render_markdown(report: Review, limit: int = MAX_CHARS) -> str:
    """The comment, at most ``limit`` characters."""
    variants = ((True, False, ""), (False, False, "source excerpts"), (False, True, "source excerpts, the hops of graph findings and the servers' policy tables"))
    for excerpts, compact, dropped in variants:
        blocks = _blocks(report, excerpts, compact)
        if dropped:
            blocks.append(_note(report, f"leaves out the {dropped}", limit))
        whole = "\n\n".join(blocks) + "\n"
        if len(whole) <= limit:
            return whole
    return _cut(_blocks(report, False, True), report, limit)


def _note(report: Review, what: str, limit: int) -> str:
    return f"> **Truncated**: this comment {what} to stay under {limit:,} characters; <code>mcpspec report {text(report.file)} -o report.html</code> shows everything."


def _cut(blocks: list[str], report: Review, limit: int) -> str:
    """The blocks that fit, in order (a block too long for what is left is skipped), the
    <details> they opened closed, then the note."""
    note = _note(report, "leaves out what did not fit", limit)
    kept: list[str] = []
    used = len(note) + 2
    depth = 0
    skipped = 0  # <details> openers left out, whose closers must go too
    for block in blocks:
        opened = block.count("<details") - block.count("</details>")
        if opened < 0 and skipped:
            skipped += opened
            continue
        closing = len("\n\n</details>") * max(0, depth + opened)
        if used + len(block) + 2 + closing > limit:
            skipped += max(0, opened)
            continue
        kept.append(block)
        used += len(block) + 2
        depth += opened
    kept += ["</details>"] * max(0, depth)
    return "\n\n".join([*kept, note]) + "\n"


def _blocks(report: Review, excerpts: bool, compact: bool) -> list[str]:
    """Summary, picture, waivers, findings and enforcement first (what a reviewer decides on), server cards last."""
    out = [_head(report)]
    if not report.valid:
        out.append(f"### Spec errors ({len(report.errors)})\n\nThe file is not a valid spec: nothing else can be judged until these are fixed.")
        out.extend(_finding(f, report, excerpts, compact) for f in report.errors)
        return out
    out.append(_summary(report))
    if report.shown is not None:
        out.append(_picture(report))
    if report.boundary is not None:
        out.append(_boundary(report))
        out.extend(_finding(f, report, excerpts, compact) for f in report.excesses)
    out.append(_waivers(report))
    out.append(f"### Findings ({len(report.findings)})" + ("\n\nNo finding: every rule passes." if not report.findings else ""))
    for level in LEVELS:
        found = [f for f in report.findings if f.severity == level]
        if found:
            out.append(f"<details{' open' if level in ('critical', 'error') else ''}><summary><b>{len(found)} {level}</b></summary>\n")
            out.extend(_finding(f, report, excerpts, compact) for f in found)
            out.append("</details>")
    if report.suppressed:
        out.append(f"<details><summary>{len(report.suppressed)} suppressed</summary>\n")
        out.extend(_finding(f, report, False, True) for f in report.suppressed)
        out.append("</details>")
    if report.target is not None:
        out.append(_enforcement(report, compact))
    out.append("### Servers")
    out.extend(_card(card, report, compact) for card in report.servers)
    return out


def _head(report: Review) -> str:
    if not report.valid:
        verdict = "⛔ **invalid spec**"
    elif report.failed:
        verdict = f"❌ **fails lint** (--fail-on {report.fail_on})"
    else:
        verdict = f"✅ **passes lint** (--fail-on {report.fail_on})"
    if report.excesses:
        verdict += f" · ❌ **{len(report.excesses)} boundary excess{'es' if len(report.excesses) != 1 else ''}**"
    elif report.boundary is not None:
        verdict += " · ✅ **within the boundary**"
    lines = [f"## mcpspec report: {text(report.project or report.file)}", "", f"{code(report.file)} · {text(report.generator)} · {report.today} · {verdict}"]
    if report.target:
        lines[-1] += f" · target {text(report.target)}"
    if report.description:
        lines += ["", text(report.description)]
    return "\n".join(lines)


def _summary(report: Review) -> str:
    severities = " · ".join(f"**{n} {level}**" for level, n in report.counts.items()) or "none"
    suppressed = f" ({len(report.suppressed)} suppressed)" if report.suppressed else ""
    lines = [
        "### Summary",
        "",
        f"{len(report.servers)} servers · {len(report.agents)} agents · {len(report.findings)} findings{suppressed}: {severities} · {len(report.waivers)} waivers",
        "",
        "| server | tier | why | what it can do |",
        "|---|---|---|---|",
    ]
    for card in report.servers[:SUMMARY_ROWS]:
        lines.append(f"| {text(card.name)} | {_TIER_MARK[card.tier]} {card.tier} | {text(card.reason)} | {text(', '.join(card.traits))} |")
    if len(report.servers) > SUMMARY_ROWS:
        lines.append(f"| and {len(report.servers) - SUMMARY_ROWS} more | | | |")
    if report.agents:
        lines += ["", "| agent | servers in its context |", "|---|---|"]
        lines += [f"| {text(a.name)} | {text(', '.join(a.servers))} |" for a in report.agents]
    return "\n".join(lines)


def _picture(report: Review) -> str:
    from mcpspec.report.graph.mermaid import render_mermaid

    assert report.shown is not None
    attack = len(report.shown.attack)
    lead = f"{attack} edges on attack paths (thick red)" if attack else "no attack path"
    return (
        f"<details><summary>Trust picture: {lead}</summary>\n\n"
        "Boxes are filled by their worst finding (red critical, orange high, yellow medium, blue low); "
        "`==>` rw mount, `-.->` ro mount, secret, egress and agent links are labelled.\n\n"
        f"{fenced(render_mermaid(report.shown).splitlines(), 'mermaid')}\n\n</details>"
    )


def _rows(rows: list[tuple[str, str]]) -> list[str]:
    return [f"| {text(key)} | {text(value)} |" for key, value in rows]


def _card(card: ServerCard, report: Review, compact: bool) -> str:
    counts = ", ".join(f"{n} {level}" for level, n in card.counts.items()) or "no finding"
    lines = [
        f"<details><summary>{_TIER_MARK[card.tier]} <b>{text(card.name)}</b>: {card.tier} ({counts})</summary>",
        "",
        f"{text(card.description)}" if card.description else "",
        "",
        f"{text(card.kind)}, {text(card.trust)}, placement **{card.placement}**; used by {text(', '.join(card.agents)) or 'no agent'}. {code(card.runs)}",
        "",
        f"**Why {card.tier}:** {text(card.reason)}",
        "",
        "| mount from | to | mode | note |",
        "|---|---|---|---|",
    ]
    lines += [f"| {code(m.source)} | {code(m.target)} | {'**rw**' if m.mode == 'rw' else 'ro'} | {text(m.note)} |" for m in card.mounts] or ["| none | | | |"]
    lines += ["", "| secret | provider | scopes | ttl | given as |", "|---|---|---|---|---|"]
    lines += [f"| {text(g.name)} | {text(g.provider)} | {text(g.scopes)} | {text(g.ttl)} | {code(g.form)} |" for g in card.secrets] or ["| none | | | | |"]
    if not compact:
        lines += ["", "| policy | value |", "|---|---|"]
        lines += _rows([(f"egress {k}", v) for k, v in card.egress])
        lines += _rows([(f"process {k}", v) for k, v in card.process])
        lines += _rows([(f"lifecycle {k}", v) for k, v in card.lifecycle])
        lines += _rows([(f"logging {k}", v) for k, v in card.logging])
    lines += ["", "| tool | effects | approval |", "|---|---|---|"]
    lines += [f"| {code(t.name)} | {text(t.effects)} | {text(t.approval)} |" for t in card.tools] or ["| none listed | | |"]
    blast = card.blast
    reach = [
        ("secrets", ", ".join(blast.secrets)),
        ("host paths", ", ".join(blast.paths)),
        ("network", ", ".join(blast.destinations)),
        ("agents' context", ", ".join(blast.agents)),
        ("other servers", "; ".join(blast.servers)),
    ]
    lines += ["", f"Blast radius of {text(card.name)}:" + (" nothing beyond its own sandbox" if blast.empty else ""), ""]
    if not blast.empty:
        lines += ["| reaches | what |", "|---|---|", *_rows([(k, v) for k, v in reach if v])]
    if card.findings:
        lines += ["", "Findings: " + ", ".join(f"{f.code} ({f.severity}, line {f.line})" for f in card.findings[:40]) + (" …" if len(card.findings) > 40 else "")]
    lines += ["", "</details>"]
    return "\n".join(lines)


def _finding(f: FindingView, report: Review, excerpts: bool, compact: bool) -> str:
    link = f"[{f.code}]({report.rule_docs_url}{f.doc_file})" if f.doc_file else f.code
    head = f"- {link} **{f.severity}** {code(f.slug)} at {code(f.path)} (line {f.line}:{f.column}): {text(f.message)}"
    if f.suppression:
        head += f" — suppressed by {text(f.suppression)}"
    parts = [head]
    if f.hops and not compact:
        parts += [f"  {n}. line {hop.line}: {code(hop.path)}: {text(hop.note)}" for n, hop in enumerate(f.hops, 1)]
    if excerpts and f.excerpt:
        block = fenced(f"{'>' if line.hit else ' '}{line.number:>4} | {line.text}" for line in f.excerpt)
        parts += ["", "  <details><summary>source</summary>", "", *("  " + line for line in block.splitlines()), "", "  </details>"]
    return "\n".join(parts)


def _boundary(report: Review) -> str:
    assert report.boundary is not None
    head = f"### Boundary excesses ({len(report.excesses)})\n\nMeasured against the boundary {code(report.boundary)} (<code>mcpspec check --within</code>): "
    if not report.excesses:
        return head + "the spec stays within it."
    return head + "each excess is one concrete request, mount or value the spec allows and the boundary does not, at the spec value that allows it."


def _waivers(report: Review) -> str:
    if not report.waivers:
        return "### Waivers\n\nThe spec accepts no risk by waiver."
    lines = ["### Waivers", "", "| rule | at | reason | expires | status | findings covered |", "|---|---|---|---|---|---|"]
    lines += [f"| {text(w.rule)} | {code(w.at)} | {text(w.reason)} | {w.expires} | {w.status} | {w.covers} |" for w in report.waivers]
    return "\n".join(lines)


def _enforcement(report: Review, compact: bool) -> str:
    assert report.target is not None
    lines = [f"### What {text(report.target)} enforces", ""]
    for card in report.servers:
        lines.append(f"<details><summary>{text(card.name)}: " + _levels(card) + "</summary>\n")
        if card.enforcement:
            lines += ["| control | kind | level | how, or what is missing |", "|---|---|---|---|"]
            lines += [
                f"| {text(c.control)} | {c.kind} | {'✅' if c.level == 'full' else ('⚠️' if c.level == 'partial' else '❌')} {c.level} | {text(c.note)} |"
                for c in card.enforcement
                if not (compact and c.level == "full")
            ]
        else:
            lines.append(text(card.enforcement_note))
        lines += ["", "</details>"]
    return "\n".join(lines)


def _levels(card: ServerCard) -> str:
    if not card.enforcement:
        return "nothing enforced"
    counted = {level: sum(1 for c in card.enforcement if c.level == level) for level in ("full", "partial", "none")}
    return ", ".join(f"{n} {level}" for level, n in counted.items() if n)
