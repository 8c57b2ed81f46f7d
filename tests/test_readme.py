"""The README's quick start and the output it shows stay true."""

from __future__ import annotations

import re

from conftest import REPO, run_cli

README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_quick_start_is_exactly_make_demo_and_make_test() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = [line.split("#")[0].strip() for line in _blocks("sh")[0].splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert "```sh" in quick_start


def test_every_lint_output_shown_is_what_lint_prints() -> None:
    shown = [block for block in _blocks("text") if block.startswith(("examples/", "tests/"))]
    assert shown, "the README shows no lint output"
    for block in shown:
        first = block.splitlines()[0]
        file = first.split(":", 1)[0]
        code = first.split(": ", 2)[1].split()[0]
        args = ["lint", file] if file.startswith("tests/") else ["lint", file, "--select", code]
        printed = run_cli(*args).stdout
        for line in block.splitlines():
            assert line in printed.splitlines(), f"README shows a line lint does not print: {line!r}"
