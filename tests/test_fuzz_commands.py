"""Fuzzing every command past lint: a mutated real spec (often still valid: values swapped for
odd ones of the same type; tests/test_fuzz_loader.py lints the ones that break every type) goes through every lint format, the graph, the plan, the report, a
build for every target written to disk, and a diff against the spec it came from. Each gives
its output, or spec errors and findings, never an exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from fuzzing import EXAMPLES, FUZZ, SPECS, mutated_specs
from mcpspec import api
from mcpspec.diff.run import diff_plans
from mcpspec.report.renderers import GRAPH_FORMATS, LINT_FORMATS, PLAN_FORMATS, REPORT_FORMATS
from mcpspec.settings import Settings
from mcpspec.targets import TARGET_NAMES
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.writer import OutputError, write_build

OPTIONS = {"client": BuildOptions(client="claude-code")}


@settings(FUZZ, max_examples=max(10, EXAMPLES // 2))  # each case runs every command: half as many
@given(mutated_specs(keep_types=True), st.sampled_from(SPECS))
def test_every_command_on_a_mutated_spec_gives_output_or_errors(text: str, original: Path) -> None:
    chosen = Settings()
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "mcp-sandbox.yaml"
        spec.write_text(text, encoding="utf-8")
        run = api.lint_files([spec], chosen)
        for render in LINT_FORMATS.values():
            assert render(run.report, False)
        if any(result.severity == "error" for result in run.report.results):
            event("spec errors")
            assert api.graph_file(spec, chosen).view is None and api.plan_file(spec).data is None
            return
        event("valid")
        shown = api.graph_file(spec, chosen).view
        assert shown is not None
        for name, draw in GRAPH_FORMATS.items():
            if name != "svg":  # svg is dot's rendering of the dot output, checked on the examples
                assert draw(shown)
        data = api.plan_file(spec).data
        assert data is not None
        for write in PLAN_FORMATS.values():
            assert write(data)
        found, _ = api.review_file(spec, chosen)
        for page in REPORT_FORMATS.values():
            assert page(found)
        for target in TARGET_NAMES:
            out = Path(folder) / "out" / target
            outcome = api.build_file(spec, target, chosen, build_options=OPTIONS.get(target), out_dir=out)
            if outcome.build is not None and not outcome.stopped:
                event(f"built {target}")
                try:
                    write_build(out, outcome.build)
                except OutputError as exc:
                    raise AssertionError(exc) from None
        diff_plans(api.load(original), api.load(spec), chosen)
