"""targets/ holds each target's README and the compiled examples: rebuilt here, they must match byte for byte."""

from __future__ import annotations

import stat

from conftest import EXAMPLES, REPO
from mcpspec.targets import TARGET_NAMES
from mcpspec.targets.examples import expected_tree

TARGETS = REPO / "targets"


def test_targets_directory_matches_a_fresh_build() -> None:
    expected = expected_tree()
    present = {path.relative_to(TARGETS).as_posix(): path for path in TARGETS.rglob("*") if path.is_file()}
    assert sorted(present) == sorted(expected), "run `make targets` and commit targets/"
    for name, (text, mode) in expected.items():
        assert present[name].read_text(encoding="utf-8") == text, f"targets/{name} is out of date: run `make targets`"
        assert stat.S_IMODE(present[name].stat().st_mode) & 0o111 == mode & 0o111, f"targets/{name}: wrong executable bit"


def test_every_example_has_a_compiled_case_for_every_target() -> None:
    # A golden test that finds no case proves nothing (compose-go's rule).
    assert EXAMPLES
    for target in TARGET_NAMES:
        cases = sorted(path.parent.name for path in (TARGETS / target).glob("*/build.txt"))
        assert cases == sorted(path.stem for path in EXAMPLES)
        built = [case for case in cases if (TARGETS / target / case / ".mcpspec-build.json").exists()]
        # Every example that is not built fails closed with a finding that names why.
        for case in sorted(set(cases) - set(built)):
            text = (TARGETS / target / case / "build.txt").read_text(encoding="utf-8")
            assert "nothing built" in text or "stop" in text or any(f" {code} [" in text for code in ("TG001", "TG004")), f"{target}/{case}"
        assert built, f"no example builds for {target}"


def test_every_readme_ends_with_every_targets_matrix_side_by_side() -> None:
    from mcpspec.targets import get_target
    from mcpspec.targets.base import CONTROLS

    for target in TARGET_NAMES:
        text = (TARGETS / target / "README.md").read_text(encoding="utf-8")
        section = text[text.index("## Every target side by side"):]
        assert "\n## " not in section[3:], f"{target}: the side-by-side matrix is not the README's last section"
        rows = [line for line in section.splitlines() if line.startswith("| ")]
        assert rows[0] == "| control | " + " | ".join(TARGET_NAMES) + " |"  # a new target is a new column by itself
        assert len(rows) == 1 + len(CONTROLS)
        for control, row in zip(CONTROLS, rows[1:], strict=True):
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            assert cells[0] == control.title
            for name, cell in zip(TARGET_NAMES, cells[1:], strict=True):
                capability = get_target(name).capabilities[control.id]
                assert cell.split("[^")[0] == capability.level, (target, name, control.id)
                if capability.level != "full":  # the reason is a footnote of the same file
                    note = cell[cell.index("[^"):]
                    assert f"\n{note}: {name}, {control.title}: {capability.how}" in section
