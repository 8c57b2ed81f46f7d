"""`mcpspec report` and `mcpspec diff` with a boundary (--within, or `within:` in the config found
for the spec): the report shows each excess with its counterexample and spec line (HTML and
Markdown), the diff says which excesses a change adds or removes, and a new one is growth."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from conftest import REPO, run_cli
from mcpspec import api

SPEC = REPO / "examples" / "coding-agent.yaml"
LIMITLESS = "  process: {allow: [], listeners: false, background: {allowed: false}}"
LIMITED = "  process: {allow: [], listeners: false, background: {allowed: false}, max_runtime: 10m}"
EXCESS = "docs has process.max_runtime none; the boundary allows at most 15m"


def _versions(tmp_path: Path) -> tuple[Path, Path]:
    """The example as it is and with a time limit on spawned commands, and (as tmp_path/boundary.yaml)
    a boundary that is the example itself with a 15m limit: the first exceeds it once, the second not
    (a spec is within itself, so no other comparison the check learns changes this)."""
    text = SPEC.read_text(encoding="utf-8")
    assert LIMITLESS in text
    old, new = tmp_path / "old.mcp-sandbox.yaml", tmp_path / "new.mcp-sandbox.yaml"
    old.write_text(text, encoding="utf-8")
    new.write_text(text.replace(LIMITLESS, LIMITED), encoding="utf-8")
    (tmp_path / "boundary.yaml").write_text(text.replace(LIMITLESS, LIMITLESS[:-1] + ", max_runtime: 15m}"), encoding="utf-8")
    return old, new


class _Section(HTMLParser):
    """The articles of the page's boundary section: (data-code, data-line, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.articles: list[dict[str, str]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {key: value or "" for key, value in attrs}
        if tag == "section":
            self.inside = found.get("id") == "boundary"
        elif tag == "article" and self.inside:
            self.articles.append(found)

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.texts.append(data)


def test_the_html_report_shows_each_excess_at_its_spec_line(tmp_path: Path) -> None:
    old, new = _versions(tmp_path)
    boundary = tmp_path / "boundary.yaml"
    page = tmp_path / "report.html"
    found = run_cli("report", str(old), "--within", str(boundary), "-o", str(page), "--fail-on", "never")
    assert found.returncode == 1 and "1 excess(es) over the boundary" in found.stderr
    section = _Section()
    section.feed(page.read_text(encoding="utf-8"))
    (article,) = section.articles
    # no max_runtime is written: the place is the nearest thing that is, as check prints it
    line = api.load(old).source.anchor_span(("servers", "docs", "process", "max_runtime")).line
    assert article["data-code"] == "BX004" and article["data-line"] == str(line) and article["data-path"] == "servers.docs.process.max_runtime"
    assert EXCESS in "".join(section.texts)
    # the same spec, fixed: the section says it stays within, and the exit is lint's
    fixed = run_cli("report", str(new), "--within", str(boundary), "-o", str(page), "--fail-on", "never")
    assert fixed.returncode == 0, fixed.stderr
    section = _Section()
    section.feed(page.read_text(encoding="utf-8"))
    assert not section.articles and "The spec stays within the boundary." in "".join(section.texts)
    # without a boundary, no section at all
    assert run_cli("report", str(new), "-o", str(page), "--fail-on", "never").returncode == 0
    assert 'id="boundary"' not in page.read_text(encoding="utf-8")


def test_the_markdown_report_finds_the_boundary_in_the_config(tmp_path: Path) -> None:
    old, _ = _versions(tmp_path)
    (tmp_path / ".mcpspec.yaml").write_text("within: boundary.yaml\n", encoding="utf-8")
    found = run_cli("report", old.name, "-f", "markdown", "--fail-on", "never", cwd=tmp_path)
    assert found.returncode == 1
    assert "### Boundary excesses (1)" in found.stdout and "❌ **1 boundary excess**" in found.stdout
    assert "BX004" in found.stdout and "process.max&#95;runtime none; the boundary allows at most 15m" in found.stdout
    assert run_cli("report", old.name, "-f", "markdown", "--exit-zero", cwd=tmp_path).returncode == 0


def test_a_report_with_a_bad_boundary_exits_2_naming_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad-boundary.yaml"
    bad.write_text("version: 1\nproject: b\nservers:\n  any-server: {command: [x], egress: {default: maybe}}\n", encoding="utf-8")
    found = run_cli("report", str(SPEC), "--within", str(bad), "-f", "markdown")
    assert found.returncode == 2 and f"{bad}:4:" in found.stderr and "Traceback" not in found.stderr


def test_the_diff_names_the_excesses_a_change_adds_and_removes(tmp_path: Path) -> None:
    old, new = _versions(tmp_path)
    boundary = tmp_path / "boundary.yaml"
    fixing = run_cli("diff", str(old), str(new), "--within", str(boundary), "--fail-on-growth")
    assert fixing.returncode == 0, fixing.stdout
    assert f"- docs boundary: excess removed: BX004 lifecycle-excess at servers.docs.process.max_runtime: {EXCESS}" in fixing.stdout.splitlines()
    assert fixing.stdout.splitlines()[-1].endswith(f"boundary {boundary}: 0 excesses added, 1 removed")
    # the other way round, the excess is new: growth, exit 1 with --fail-on-growth
    breaking = run_cli("diff", str(new), str(old), "--within", str(boundary), "--fail-on-growth", "-f", "json")
    assert breaking.returncode == 1
    data = json.loads(breaking.stdout)
    assert data["grew"] is True and data["boundary"] == {"file": str(boundary), "added": 1, "removed": 0, "reworded": 0}
    (change,) = [c for c in data["changes"] if c["category"] == "boundary"]
    assert change["effect"] == "grew" and change["server"] == "docs" and EXCESS in change["message"]
    markdown = run_cli("diff", str(new), str(old), "--within", str(boundary), "-f", "markdown")
    assert "Excesses over the boundary: boundary" in markdown.stdout and "1 excess added, 0 removed" in markdown.stdout
    assert "new excess: BX004" in markdown.stdout


def test_a_change_that_only_an_excess_sees_is_growth(tmp_path: Path) -> None:
    """Only the boundary makes this change a problem: the spec moves a secret to a provider the
    boundary does not allow, same ttl; with --within the diff counts the new excess as growth."""
    spec = "version: 1\nproject: p\nsecrets:\n  t: {{provider: {p}, ref: x, ttl: 30m}}\nservers:\n  s:\n    command: [x]\n    secrets: [{{use: t, as: {{env: T}}}}]\n"
    boundary = "version: 1\nproject: b\nsecrets:\n  v: {provider: vault, ref: any, ttl: 1h}\nservers:\n  any-server:\n    command: [any]\n    secrets: [{use: v, as: {env: ANY}}]\n"
    (tmp_path / "a.yaml").write_text(spec.format(p="vault"), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(spec.format(p="env"), encoding="utf-8")
    (tmp_path / "boundary.yaml").write_text(boundary, encoding="utf-8")
    (tmp_path / ".mcpspec.yaml").write_text("within: boundary.yaml\n", encoding="utf-8")
    found = run_cli("diff", "a.yaml", "b.yaml", "--fail-on-growth", cwd=tmp_path)
    assert found.returncode == 1
    (line,) = [line for line in found.stdout.splitlines() if " boundary: " in line]
    assert line.startswith("+ s boundary: new excess: BX003 secret-excess at secrets.t: ") and "from env with ttl 30m" in line, line
    assert found.stdout.splitlines()[-1].endswith("boundary.yaml: 1 excess added, 0 removed")
