"""The HTML report opened in a real browser: Debian's chromium, driven by playwright.

For every example and for a spec whose names and descriptions hold markup and script:
the page renders something (a screenshot that is not one flat colour), the title, the
trust picture and every finding `mcpspec lint -f json` reports are in the DOM, no
script from the spec ran, and the page asked for nothing over the network (every
request is recorded, and anything but the page's own file is aborted, so no packet
leaves even if one were made). `playwright install` is never run: the browser is the
system's.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, REPO, require_tool, run_cli

HOSTILE = REPO / "tests" / "data" / "report" / "hostile.yaml"
BROKEN = REPO / "tests" / "corpus" / "demo-broken.yaml"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# What the hostile spec's payloads would set if any of them ran.
PAYLOAD_CHECK = "() => [window.pwned, document.querySelectorAll('script, iframe, img, marquee').length]"
# The screenshot's pixel variance, decoded by the browser itself in a blank page of its own.
VARIANCE = """async (data) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + data;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const pixels = context.getImageData(0, 0, image.width, image.height).data;
  let sum = 0, squares = 0, count = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    const grey = (pixels[i] + pixels[i + 1] + pixels[i + 2]) / 3;
    sum += grey; squares += grey * grey; count += 1;
  }
  const mean = sum / count;
  return [squares / count - mean * mean, image.width, image.height];
}"""


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        message = "playwright is not installed: pip install playwright (it comes with pip install -e '.[test]'; never run `playwright install`)"
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail(f"{message} (required: MCPSPEC_REQUIRE_REAL_TOOLS=1)", pytrace=False)
        pytest.skip(message)
    return sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = require_tool("chromium")
    sync_playwright = _playwright()
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


def _report(spec: Path, directory: Path) -> Path:
    out = directory / f"{spec.stem}.html"
    done = run_cli("report", str(spec.relative_to(REPO)), "-o", str(out), "--exit-zero", "--target", "bwrap")
    assert done.returncode == 0, done.stderr
    return out


def _lint(spec: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = json.loads(run_cli("lint", "-f", "json", str(spec.relative_to(REPO))).stdout)["results"]
    return results


class Visit:
    """One page opened in a fresh context, with every request it made."""

    def __init__(self, browser: Any, page_file: Path) -> None:
        self.url = page_file.as_uri()
        self.requests: list[str] = []
        self.context = browser.new_context(viewport={"width": 1366, "height": 900}, java_script_enabled=True)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.goto(self.url, wait_until="load")

    def _route(self, route: Any) -> None:
        if route.request.url == self.url:
            route.continue_()
        else:
            route.abort()

    def variance(self) -> tuple[float, int, int]:
        shot = self.page.screenshot(full_page=False)
        blank = self.context.new_page()
        try:
            found: list[Any] = blank.evaluate(VARIANCE, base64.b64encode(shot).decode("ascii"))
        finally:
            blank.close()
        return float(found[0]), int(found[1]), int(found[2])

    def close(self) -> None:
        self.context.close()


@pytest.mark.parametrize("spec", [*EXAMPLES, HOSTILE], ids=lambda p: p.name)
def test_report_opens_in_chromium(browser: Any, spec: Path, tmp_path: Path) -> None:
    visit = Visit(browser, _report(spec, tmp_path))
    try:
        page = visit.page
        variance, width, height = visit.variance()
        assert (width, height) == (1366, 900)
        assert variance > 100, f"the screenshot is (nearly) one colour: variance {variance:.1f}"
        title = page.title()
        assert title.endswith("sandbox policy review") and page.inner_text("#title") == title
        assert page.locator("#picture svg.graph").count() == 1
        assert page.locator("#picture svg.graph g.node").count() >= 3
        box = page.locator("#picture svg.graph").bounding_box()
        assert box is not None and box["width"] <= 1366 and box["height"] <= 900, box  # the picture fits the screen
        assert page.locator("#legend").is_visible()
        shown = page.eval_on_selector_all(
            "article.finding", "nodes => nodes.map(n => [n.dataset.code, n.dataset.line, n.dataset.column, n.dataset.path])"
        )
        for result in _lint(spec):
            assert [result["code"], str(result["line"]), str(result["column"]), result["path"]] in shown, result
        assert page.locator("#servers article.card").count() == page.locator("#tiers tbody tr").count() > 0
        pwned, planted = page.evaluate(PAYLOAD_CHECK)
        assert pwned is None and planted == 0
        assert visit.requests == [visit.url], visit.requests
    finally:
        visit.close()


def test_hostile_text_is_shown_as_text(browser: Any, tmp_path: Path) -> None:
    visit = Visit(browser, _report(HOSTILE, tmp_path))
    try:
        page = visit.page
        body = page.inner_text("body")
        assert "<script>window.pwned='project'</script>" in body
        assert "{{ 7*7 }}" in body and "<marquee>accepted</marquee> @security-team" in body
        # A tooltip of the picture holds the path with its markup as text.
        titles = page.eval_on_selector_all("#picture svg title", "nodes => nodes.map(n => n.textContent)")
        assert any("</text><script>window.pwned='path'</script>" in title for title in titles)
        # Hovering and clicking what the payloads target runs nothing either.
        page.hover("#servers article.card")
        page.click("#picture svg.graph a")
        assert page.evaluate("() => window.pwned") is None
        assert visit.requests == [visit.url], visit.requests
        assert "ghp_0123456789abcdefghij" not in page.content()
    finally:
        visit.close()


def test_invalid_spec_report_shows_its_errors(browser: Any, tmp_path: Path) -> None:
    visit = Visit(browser, _report(BROKEN, tmp_path))
    try:
        page = visit.page
        assert "the spec has errors" in page.title()
        codes = page.eval_on_selector_all("#errors article.finding", "nodes => nodes.map(n => n.dataset.code)")
        assert codes == [r["code"] for r in _lint(BROKEN)]
        assert visit.variance()[0] > 100
        assert visit.requests == [visit.url]
    finally:
        visit.close()


def test_report_prints(browser: Any, tmp_path: Path) -> None:
    """Printed (to PDF), the page keeps the picture and every card: no part depends on the screen."""
    visit = Visit(browser, _report(REPO / "examples" / "coding-agent.yaml", tmp_path))
    try:
        pdf = visit.page.pdf(format="A4")
        assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
        visit.page.emulate_media(media="print")
        assert visit.page.locator("nav").is_hidden()
        assert visit.page.locator("#picture svg.graph").is_visible()
    finally:
        visit.close()


# Long host paths, one with a name longer than a line (wrapped, never cut).
LONG_PATHS = [
    "/srv/customers/acme-corporation-exports/2026/quarterly-reports",
    "/var/lib/mcp/acme-coding-agent/workspaces/shared/cache/pip/http/wheels/a1",
    "/home/alice/.config/gcloud/application_default_credentials.json",
]
# Per path box: its rectangle, and each line of text with its drawn extent.
PATH_BOXES = """() => [...document.querySelectorAll('#picture svg.graph g.node[data-kind="path"]')].map(g => {
  const rect = g.querySelector('rect').getBBox();
  return [g.querySelector('title').textContent, [rect.x, rect.width],
          [...g.querySelectorAll('text')].map(t => { const b = t.getBBox(); return [t.textContent, b.x, b.width, t.getAttribute('font-weight')]; })];
})"""


def test_long_host_paths_wrap_between_segments_inside_their_boxes(browser: Any, tmp_path: Path) -> None:
    """As drawn by the browser: every line of a path box lies inside the box, the path's lines
    are its segments in order (bold, as the name), and no name is cut."""
    spec = tmp_path / "long-paths.yaml"
    mounts = "".join(f"      - {{from: {path}, to: /m{n}, mode: ro}}\n" for n, path in enumerate(LONG_PATHS))
    spec.write_text("version: 1\nproject: long-paths\nservers:\n  s:\n    command: [s-mcp]\n    mounts:\n" + mounts, encoding="utf-8")
    out = tmp_path / "long-paths.html"
    done = run_cli("report", str(spec), "-o", str(out), "--exit-zero")
    assert done.returncode == 0, done.stderr
    visit = Visit(browser, out)
    try:
        boxes = visit.page.evaluate(PATH_BOXES)
        assert sorted(title.split(" — ")[0] for title, _, _ in boxes) == sorted(LONG_PATHS)
        for title, (x, width), texts in boxes:
            path = title.split(" — ")[0]
            for text, left, drawn, _ in texts:
                assert x <= left and left + drawn <= x + width, (path, text, left, drawn, x, width)
            name = [text for text, _, _, weight in texts if weight == "600"]
            joined = "".join(name)
            assert len(name) > 1, (path, name)
            if "/…" in joined:  # whole segments gave way, the first and the last kept
                head, tail = joined.split("/…")
                assert path.startswith(head + "/") and path.endswith(tail) and tail.startswith("/"), (path, name)
            else:
                assert joined == path, (path, name)
        assert visit.requests == [visit.url]
    finally:
        visit.close()
