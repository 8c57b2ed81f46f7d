"""The formats of ``mcpspec diff``: text (one line per change), markdown (a pull-request
comment) and json (stable, documented in docs/diff.md).

Every message and value goes through :func:`mcpspec.redact.redact`: a token written into a
spec by mistake never reaches a CI log or a PR comment.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

from mcpspec.diff.model import PROJECT, Change, Diff
from mcpspec.redact import redact

FORMATS = ("text", "markdown", "json")
JSON_SCHEMA = "mcpspec-diff/2"
MARKDOWN_LIMIT = 65_000
_MARK = {"grew": "+", "shrank": "-", "neutral": "~"}
_BADGE = {"grew": "🔺 grew", "shrank": "🔻 shrank", "neutral": "▫️ neutral"}


def _scope(server: str) -> str:
    return "project" if server == PROJECT else server


def verdict_line(diff: Diff) -> str:
    counts = diff.counts()
    tail = f" ({counts['grew']} grew, {counts['shrank']} shrank, {counts['neutral']} neutral)" if diff.privileges else ""
    found = findings_summary(diff)
    return f"verdict: {diff.verdict}{tail}" + (f"; {found}" if found else "") + (f"; {excess_summary(diff)}" if diff.boundary is not None else "")


def excess_summary(diff: Diff) -> str:
    """``boundary: 1 excess added, 0 removed over B``: said whenever a boundary was given."""
    counted = diff.excess_counts()
    added = counted["added"]
    tail = f", {counted['reworded']} reworded" if counted["reworded"] else ""
    return f"boundary {diff.boundary}: {added} excess{'es' if added != 1 else ''} added, {counted['removed']} removed{tail}"


_FINDING_WORDS = {
    "findings": {"new": "new finding", "resolved": "finding resolved", "waived": "finding newly waived", "unwaived": "finding no longer waived", "reworded": "finding reworded"},
    "attack-paths": {"new": "new attack path", "resolved": "attack path closed", "waived": "attack path newly waived", "unwaived": "attack path no longer waived", "reworded": "attack path reworded"},
}


def findings_summary(diff: Diff) -> str:
    """``2 new findings, 1 new attack path, 1 finding resolved``: lint's changes, apart from privileges."""
    parts: list[str] = []
    for category, counted in diff.finding_counts().items():
        for kind, count in counted.items():
            if count:
                words = _FINDING_WORDS[category][kind]
                parts.append(f"{count} {words if count == 1 else _plural(words)}")
    return ", ".join(parts)


def _plural(words: str) -> str:
    return words.replace("finding", "findings", 1).replace("path", "paths", 1)


def text(diff: Diff) -> str:
    """``+|-|~ SCOPE CATEGORY: MESSAGE`` per change (+ grew, - shrank, ~ neutral), then the verdict."""
    lines = [f"{_MARK[c.effect]} {_scope(c.server)} {c.category}: {_one_line(c.message)}" for c in diff.changes]
    lines.append(verdict_line(diff))
    return "\n".join(lines) + "\n"


def _one_line(message: str) -> str:
    return redact(" ".join(message.split()))


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        if value and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in value):
            return {key: _plain(item) for key, item in value}
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return redact(value)
    return value


def json_output(diff: Diff) -> str:
    data = {
        "schema": JSON_SCHEMA,
        "old": redact(diff.old),
        "new": redact(diff.new),
        "target": diff.target,
        "verdict": diff.verdict,
        "grew": diff.grew,
        "shrank": diff.shrank,
        "counts": diff.counts(),
        "findings": diff.finding_counts(),
        "boundary": {"file": redact(diff.boundary), **diff.excess_counts()} if diff.boundary is not None else None,
        "changes": [
            {
                "server": None if c.server == PROJECT else c.server,
                "category": c.category,
                "effect": c.effect,
                "message": _one_line(c.message),
                "old": _plain(c.old),
                "new": _plain(c.new),
            }
            for c in diff.changes
        ],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _md(value: str) -> str:
    """Text safe in a markdown list item: no markup, no mention, no link of the spec's."""
    escaped = _one_line(value)
    for char in "\\`*_[]|#~!":
        escaped = escaped.replace(char, "\\" + char)
    return html.escape(escaped, quote=False).replace("@", "@\u200b")


def _html(value: str) -> str:
    """Text safe inside an HTML block (``<summary>``), where markdown is not read."""
    return html.escape(_one_line(value), quote=True).replace("@", "@\u200b")


def _code(value: str) -> str:
    """Text for a code span, where nothing is interpreted: only a backtick could end it."""
    return _one_line(value).replace("`", "'")


def markdown(diff: Diff, limit: int = MARKDOWN_LIMIT) -> str:
    """A PR comment: the verdict, a table per effect, and each scope's changes in a collapsible
    block (open when something grew). Never longer than ``limit`` characters: past it, the
    remaining changes are counted, not listed."""
    counts = diff.counts()
    head = [
        f"### mcpspec diff: {diff.verdict}",
        "",
        f"`{_code(diff.old)}` → `{_code(diff.new)}`" + (f" (target `{_code(diff.target)}`)" if diff.target else ""),
        "",
    ]
    if not diff.changes:
        within = [f"Excesses over the boundary: {_md(excess_summary(diff))}.", ""] if diff.boundary is not None else []
        return "\n".join([*head, "No privilege changed.", "", *within])
    if diff.privileges:
        head += ["| grew | shrank | neutral |", "|---:|---:|---:|", f"| {counts['grew']} | {counts['shrank']} | {counts['neutral']} |", ""]
    else:
        head += ["No privilege changed.", ""]
    found = findings_summary(diff)
    if found:
        head += [f"Lint findings, apart from privileges: {found}.", ""]
    if diff.boundary is not None:
        head += [f"Excesses over the boundary: {_md(excess_summary(diff))}.", ""]
    out = "\n".join(head) + "\n"
    shown = 0
    for server, changes in diff.by_server():
        block = _block(server, changes)
        tail_room = 200
        if len(out) + len(block) + tail_room > limit:
            fitted, taken = _fit(server, changes, limit - len(out) - tail_room)
            out += fitted
            shown += taken
            break
        out += block
        shown += len(changes)
    hidden = len(diff.changes) - shown
    if hidden:
        out += f"\n**{hidden} more changes are not shown** (the comment's size limit); run `mcpspec diff -f text` for all of them.\n"
    return out


def _item(change: Change) -> str:
    return f"- {_BADGE[change.effect]} **{change.category}**: {_md(change.message)}"


def _block(server: str, changes: list[Change], items: list[str] | None = None) -> str:
    grew = sum(1 for c in changes if c.effect == "grew")
    title = "the project" if server == PROJECT else f"server <code>{_html(server)}</code>"
    summary = f"{title}: {len(changes)} change{'s' if len(changes) != 1 else ''}" + (f", {grew} grew" if grew else "")
    listed = items if items is not None else [_item(c) for c in changes]
    return "\n".join([f"<details{' open' if grew else ''}>", f"<summary>{summary}</summary>", "", *listed, "", "</details>", ""]) + "\n"


def _fit(server: str, changes: list[Change], room: int) -> tuple[str, int]:
    """As many of ``changes`` as fit in ``room`` characters (grown ones first)."""
    chosen = sorted(changes, key=lambda c: (c.effect != "grew", c.sort_key()))
    frame = len(_block(server, changes, [])) + 40  # the summary's counts may differ by a few digits
    items: list[str] = []
    used = frame
    for change in chosen:
        item = _item(change)
        if used + len(item) + 1 > room:
            break
        items.append(item)
        used += len(item) + 1
    taken = chosen[: len(items)]
    return (_block(server, taken, items) if items else ""), len(items)


RENDERERS: dict[str, Callable[[Diff], str]] = {"text": text, "markdown": markdown, "json": json_output}
