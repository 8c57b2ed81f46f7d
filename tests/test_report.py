"""`mcpspec report`: the HTML page and the Markdown comment, without a browser
(tests/test_report_chromium.py opens the pages in Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, run_cli
from mcpspec import api
from mcpspec.report.review.markdown import MAX_CHARS, render_markdown

HOSTILE = REPO / "tests" / "data" / "report" / "hostile.yaml"
BROKEN = REPO / "tests" / "corpus" / "demo-broken.yaml"
CLEAN = REPO / "tests" / "corpus" / "clean.yaml"
RISKY = REPO / "examples" / "risky.yaml"
FAKE_TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345"


def lint_results(spec: Path) -> tuple[list[dict[str, object]], int]:
    done = run_cli("lint", "-f", "json", str(spec.relative_to(REPO)))
    return json.loads(done.stdout)["results"], done.returncode


class _Tags(HTMLParser):
    """Every start tag of a page, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


@pytest.mark.parametrize("spec", [*EXAMPLES, HOSTILE, CLEAN], ids=lambda p: p.name)
def test_html_report_has_every_lint_finding_and_lint_exit_status(spec: Path, tmp_path: Path) -> None:
    results, lint_status = lint_results(spec)
    out = tmp_path / "report.html"
    done = run_cli("report", str(spec.relative_to(REPO)), "-o", str(out))
    assert done.returncode == lint_status, done.stderr
    html = out.read_text(encoding="utf-8")
    shown = {(a.get("data-code"), a.get("data-line"), a.get("data-column")) for tag, a in tags(html) if tag == "article" and "data-code" in a}
    for result in results:
        assert (result["code"], str(result["line"]), str(result["column"])) in shown, result
    assert len([1 for tag, a in tags(html) if tag == "article" and "data-code" in a]) == len(results)
    assert "<svg" in html and 'id="title"' in html


def test_html_of_hostile_spec_holds_no_markup_from_it() -> None:
    found, _ = api.review_file(HOSTILE, target="bwrap")
    from mcpspec.report.review.html import render_html

    html = render_html(found)
    names = [tag for tag, _ in tags(html)]
    for forbidden in ("script", "iframe", "img", "marquee", "a href=\"javascript"):
        assert forbidden not in names, forbidden
    assert names.count("style") == 1  # the page's own
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html and "&lt;i&gt;scope&lt;/i&gt;" in html
    assert not any(key.startswith("on") for _, attrs in tags(html) for key in attrs)
    assert "javascript:" not in "".join(str(v) for _, attrs in tags(html) for v in attrs.values())
    assert "{{ 7*7 }}" in html and "&lt;script&gt;window.pwned=&#39;project&#39;&lt;/script&gt;" in html
    assert FAKE_TOKEN not in html and "ghp_****" in html
    assert "default-src 'none'" in html  # the CSP: no script, no fetch, even if escaping failed


def test_html_shows_cards_tiers_waivers_blast_radius_and_target_levels(tmp_path: Path) -> None:
    out = tmp_path / "risky.html"
    done = run_cli("report", "examples/risky.yaml", "-o", str(out), "--target", "bwrap", "--docs-url", "https://docs.acme.example/rules/")
    assert done.returncode == 1
    html = out.read_text(encoding="utf-8")
    for section in ('id="summary"', 'id="picture"', 'id="servers"', 'id="findings"', 'id="waivers"', 'id="enforcement"', 'id="rules"', 'id="legend"'):
        assert section in html
    assert 'href="https://docs.acme.example/rules/GR001-lethal-trifecta.md"' in html
    assert "Blast radius" in html and "lethal-trifecta" in html
    # the tier of shell names the attack path it is on, and every server has a card
    assert re.search(r'data-server="shell"><td><a href="#server-\d+">shell</a></td><td class="tier"><span class="chip sev-critical">critical</span></td><td>\d+ critical: GR001', html)
    plan = api.load(RISKY)
    for name in plan.servers:
        assert re.search(rf'<article class="card tier-\w+" id="server-\d+" data-server="{name}">', html), name
    assert re.search(r"<span class=\"chip sev-(minimal|medium|critical)\">(full|partial|none)</span>", html)
    assert html.count('class="wire attack"') > 0


def test_html_of_invalid_spec_shows_the_errors(tmp_path: Path) -> None:
    results, lint_status = lint_results(BROKEN)
    out = tmp_path / "broken.html"
    done = run_cli("report", str(BROKEN.relative_to(REPO)), "-o", str(out))
    assert done.returncode == lint_status == 1
    html = out.read_text(encoding="utf-8")
    assert 'id="errors"' in html and "invalid spec" in html
    for result in results:
        assert f'data-code="{result["code"]}" data-line="{result["line"]}"' in html


def test_clean_spec_says_so(tmp_path: Path) -> None:
    out = tmp_path / "clean.md"
    done = run_cli("report", str(CLEAN.relative_to(REPO)), "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "No finding: every rule passes." in text and "passes lint" in text


def test_format_from_suffix_flag_and_usage_errors(tmp_path: Path) -> None:
    md = run_cli("report", "examples/coding-agent.yaml", "-f", "markdown", "--exit-zero")
    assert md.returncode == 0 and md.stdout.startswith("## mcpspec report: acme-coding-agent")
    html = run_cli("report", "examples/coding-agent.yaml", "--exit-zero")
    assert html.stdout.startswith("<!DOCTYPE html>")
    bad = run_cli("report", "examples/coding-agent.yaml", "-o", str(tmp_path / "report.txt"))
    assert bad.returncode == 2 and "name it .html or .md" in bad.stderr and not (tmp_path / "report.txt").exists()
    assert run_cli("report", "examples/coding-agent.yaml", "-f", "pdf").returncode == 2
    unknown = run_cli("report", "examples/coding-agent.yaml", "--target", "nomad")
    assert unknown.returncode == 2 and "unknown target" in unknown.stderr
    missing = run_cli("report", "no-such.yaml")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_report_replaces_the_file_atomically(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o640)
    assert run_cli("report", "examples/coding-agent.yaml", "-o", str(out), "--exit-zero").returncode == 0
    assert out.read_text(encoding="utf-8").startswith("## mcpspec report") and out.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left


# --- Markdown ---


def _split(text: str) -> tuple[str, list[str]]:
    """The text outside fenced code blocks, and the blocks; fails on a fence left open."""
    prose: list[str] = []
    blocks: list[str] = []
    fence = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not fence and stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            blocks.append("")
        elif fence and stripped == fence:
            fence = ""
        elif fence:
            blocks[-1] += line + "\n"
        else:
            prose.append(line)
    assert not fence, "a fenced block is left open"
    return "\n".join(prose), blocks


def _balanced(text: str) -> bool:
    prose, _ = _split(text)
    return prose.count("<details") == prose.count("</details>")


def test_markdown_of_risky_stays_under_the_cap_and_says_what_it_left_out() -> None:
    found, _ = api.review_file(RISKY, target="bwrap")
    text = render_markdown(found)
    assert len(text) <= MAX_CHARS
    assert "**Truncated**" in text and "risky.yaml -o report.html</code> shows everything" in text
    assert "```mermaid\nflowchart LR" in text
    assert _balanced(text)


@pytest.mark.parametrize("limit", [4_000, 12_000, 30_000])
def test_markdown_cut_keeps_details_balanced(limit: int) -> None:
    found, _ = api.review_file(RISKY, target="bwrap")
    text = render_markdown(found, limit=limit)
    assert len(text) <= limit and "**Truncated**" in text and _balanced(text)


def test_markdown_of_small_example_is_whole_with_picture_and_excerpts() -> None:
    found, _ = api.review_file(REPO / "examples" / "coding-agent.yaml", target="bwrap")
    text = render_markdown(found)
    assert "**Truncated**" not in text and "```mermaid" in text and "<summary>source</summary>" in text
    assert "### What bwrap enforces" in text and "### Servers" in text and _balanced(text)


def test_markdown_of_hostile_spec_is_inert() -> None:
    found, _ = api.review_file(HOSTILE)
    text = render_markdown(found)
    prose, blocks = _split(text)
    mermaid = next(block for block in blocks if block.startswith("flowchart LR"))
    # Outside code blocks, no tag, mention, issue link or Markdown link from the spec survives.
    assert "<script" not in prose and "<img" not in prose and "<iframe" not in prose and "<marquee" not in prose
    assert "@octocat" not in prose and "@security-team" not in prose and "#1 " not in prose
    ours = re.sub(r"\]\(https://mcpspec\.dev/docs/rules/[A-Z]{2}\d{3}-[a-z0-9-]+\.md\)", "]", prose)  # the rule links mcpspec writes
    assert "](https" not in ours and "https://evil" not in prose
    assert "&#64;octocat" in prose and "&#60;script&#62;" in prose
    assert prose.count("<details") == prose.count("</details>")
    # Mermaid labels are entity-coded too: no quote, bracket or tag can end a label.
    assert "<script" not in mermaid and "#60;" in mermaid
    assert FAKE_TOKEN not in text


def test_markdown_of_invalid_spec_lists_the_errors() -> None:
    done = run_cli("report", str(BROKEN.relative_to(REPO)), "-f", "markdown")
    assert done.returncode == 1
    assert "invalid spec" in done.stdout and "### Spec errors (3)" in done.stdout
    assert "SC001" in done.stdout and "<summary>source</summary>" in done.stdout


def test_markdown_of_a_large_spec_keeps_summary_and_findings_under_the_cap(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from generate import generate
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    spec = tmp_path / "large.yaml"
    spec.write_text(generate(200), encoding="utf-8")
    found, _ = api.review_file(spec)
    text = render_markdown(found)
    assert len(text) <= MAX_CHARS and _balanced(text) and "**Truncated**" in text
    assert "| and 140 more | | | |" in text and "### Findings" in text and "### Waivers" in text


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.name)
def test_picture_layout_no_overlap_and_wires_join_neighbouring_columns(spec: Path) -> None:
    from mcpspec.report.review.layout import COLUMN_GAP, COLUMN_WIDTH, lay_out

    found, _ = api.review_file(spec)
    assert found.shown is not None
    picture = lay_out(found.shown, {})
    boxes = picture.boxes
    for number, a in enumerate(boxes):
        assert a.x >= 0 and a.x + a.w <= picture.width and a.y >= 0 and a.y + a.h <= picture.height
        for b in boxes[number + 1 :]:
            assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y, (a.id, b.id)
    drawn = {box.id for box in boxes}
    expected = [e for e in found.shown.edges if e.source in drawn and e.target in drawn]
    assert len(picture.wires) == len(expected)
    assert sum(w.attack for w in picture.wires) == sum(1 for e in expected if e in found.shown.attack)
    step = COLUMN_WIDTH + COLUMN_GAP
    for wire in picture.wires:
        start, end = (float(n) for n in (wire.d.split()[0][1:].split(",")[0], wire.d.split()[-1].split(",")[0]))
        assert abs(start - end) <= step, wire  # neighbouring columns, or an arc within one
    # Every node but tools is drawn; tools are folded into their servers.
    assert drawn == {n.id for n in found.shown.nodes if n.kind != "tool"}


def test_secret_declared_without_ttl_or_scopes_reads_so(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(
        "version: 1\nproject: slack-bot\nsecrets:\n  bot: {provider: env, ref: SLACK_BOT_TOKEN, ttl: none, scopes: none}\n"
        "  other: {provider: env, ref: OTHER_TOKEN}\n"
        "servers:\n  slack:\n    command: [slack-mcp]\n    secrets:\n      - {use: bot, as: {env: SLACK_BOT_TOKEN}}\n      - {use: other, as: {env: OTHER}}\n",
        encoding="utf-8",
    )
    found, _ = api.review_file(spec)
    (card,) = found.servers
    assert [(row.name, row.scopes, row.ttl) for row in card.secrets] == [("bot", "none (declared)", "never expires (declared)"), ("other", "not given", "not given")]


def test_rule_links_follow_the_config_docs_url_that_lint_uses(tmp_path: Path) -> None:
    """One setting for every link to the rule pages: SARIF's helpUri and the report's links."""
    shutil.copy(REPO / "examples" / "risky.yaml", tmp_path / "risky.yaml")
    (tmp_path / ".mcpspec.yaml").write_text("docs-url: https://docs.acme.example/mcpspec/\n", encoding="utf-8")
    out = tmp_path / "risky.md"
    subprocess.run([sys.executable, "-m", "mcpspec", "report", "risky.yaml", "-o", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert "](https://docs.acme.example/mcpspec/GR001-lethal-trifecta.md)" in out.read_text(encoding="utf-8")


# --- ordering, egress in words, host paths in the picture ---


def test_findings_are_listed_most_severe_first_then_by_place() -> None:
    from mcpspec.rules.engine import LEVELS

    found, _ = api.review_file(RISKY)
    keys = [(LEVELS.index(f.severity), f.file, f.line, f.column, f.code) for f in found.findings]
    assert keys == sorted(keys) and found.findings[0].severity == "critical"
    assert any(a.line > b.line for a, b in zip(found.findings, found.findings[1:], strict=False)), "not merely by line"
    html = run_cli("report", str(RISKY.relative_to(REPO)), "--exit-zero").stdout
    section = html.split('<section id="findings">', 1)[1].split("</section>", 1)[0]
    shown = re.findall(r'<article class="finding sev-([a-z]+)"', section)
    assert shown == [f.severity for f in [*found.findings, *found.suppressed]]
    assert shown[: len(found.findings)] == sorted(shown[: len(found.findings)], key=LEVELS.index)
    markdown = render_markdown(found, limit=10**7)
    assert markdown.index("[GR001]") < markdown.index("[TE002]"), "a critical attack path before a low at line 13"


def _one_server(tmp_path: Path, body: str) -> Path:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("version: 1\nproject: p\nservers:\n  s:\n    command: [s-mcp]\n" + body, encoding="utf-8")
    return spec


@pytest.mark.parametrize(
    ("allow", "said"),
    [
        (["api.acme.example:443", "10.1.2.3:5432"], "egress to 2 destinations"),
        (["0.0.0.0/0", "api.acme.example:443", "uploads.acme.example:443"], "egress to all IPv4 and 2 other destinations"),
        (["::/0", "api.acme.example:443"], "egress to all IPv6 and 1 other destination"),
        (["0.0.0.0/0", "::/0"], "egress to all addresses"),
        (["0.0.0.0/1", "128.0.0.0/1"], "egress to all IPv4"),
        (["0.0.0.0/0:443", "10.0.0.0/8"], "egress to all IPv4 on port 443 and 1 other destination"),
    ],
)
def test_egress_that_covers_an_address_family_says_so(tmp_path: Path, allow: list[str], said: str) -> None:
    spec = _one_server(tmp_path, f"    egress: {{default: deny, allow: {json.dumps(allow)}}}\n")
    found, _ = api.review_file(spec)
    (card,) = found.servers
    assert said in card.traits, card.traits
    assert said in render_markdown(found)


LONG_PATHS = [
    "/srv/customers/acme-corporation-exports/2026/quarterly-reports",
    "/var/lib/mcp/acme-coding-agent/workspaces/shared/cache/pip/http/wheels/a1",
    "/home/alice/.config/gcloud/application_default_credentials.json",
    "/opt/" + "x" * 70 + "/bin",
]


def test_host_paths_in_the_picture_are_never_cut_inside_a_name(tmp_path: Path) -> None:
    """A box shows a long host path wrapped between its segments, or with whole segments
    given way to '/…': never 'acme-corpo…'."""
    from mcpspec.report.review.layout import LABEL_CHARS, lay_out

    mounts = "".join(f"      - {{from: {path}, to: /m{n}, mode: ro}}\n" for n, path in enumerate(LONG_PATHS))
    found, _ = api.review_file(_one_server(tmp_path, "    mounts:\n" + mounts))
    assert found.shown is not None
    boxes = {box.title.split(" — ")[0]: box for box in lay_out(found.shown, {}).boxes if box.kind == "path"}
    assert set(boxes) == set(LONG_PATHS)
    for path, box in boxes.items():
        shown = box.lines[: box.lines.index("host path")]
        assert all(len(line) <= LABEL_CHARS for line in shown), shown
        joined = "".join(shown)
        segments = path.split("/")
        if "/…" not in joined:
            assert joined == path, shown
            continue
        head, tail = joined.split("/…")
        assert segments[: len(head.split("/"))] == head.split("/") and segments[-len(tail.split("/")) + 1 :] == tail.split("/")[1:], shown
        assert len(shown) <= 3
    assert boxes[LONG_PATHS[0]].lines[:3] == ("/srv/customers", "/acme-corporation-exports", "/2026/quarterly-reports")


def test_rule_links_are_absolute_by_default_and_the_same_as_sarifs() -> None:
    """A relative link in a pull-request comment resolves against the pull request's page."""
    sarif = json.loads(run_cli("lint", "-f", "sarif", str(RISKY.relative_to(REPO)), "--select", "GR001").stdout)
    (help_uri,) = {rule["helpUri"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"] if rule["id"] == "GR001"}
    assert help_uri.startswith("https://")
    markdown = run_cli("report", str(RISKY.relative_to(REPO)), "-f", "markdown").stdout
    html = run_cli("report", str(RISKY.relative_to(REPO))).stdout
    assert f"[GR001]({help_uri})" in markdown and f'href="{help_uri}"' in html
    assert "](docs/rules/" not in markdown and 'href="docs/rules/' not in html
    refused = run_cli("report", str(RISKY.relative_to(REPO)), "--docs-url", "docs/rules/")
    assert refused.returncode == 2 and "not an absolute http(s) URL" in refused.stderr


def test_max_chars_caps_the_markdown_and_is_refused_for_html() -> None:
    done = run_cli("report", str(RISKY.relative_to(REPO)), "-f", "markdown", "--max-chars", "9000")
    assert len(done.stdout) <= 9000 and "to stay under 9,000 characters" in done.stdout and _balanced(done.stdout)
    refused = run_cli("report", str(RISKY.relative_to(REPO)), "--max-chars", "9000")
    assert refused.returncode == 2 and "--max-chars applies to the markdown format" in refused.stderr


def test_target_client_is_a_usage_error_naming_the_targets_to_use() -> None:
    result = run_cli("report", "examples/coding-agent.yaml", "-f", "markdown", "--target", "client")
    assert result.returncode == 2 and "give --target bwrap or compose" in result.stderr and "internal error" not in result.stderr
