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


def _readme_packages() -> tuple[list[str], list[str]]:
    """The packages listed under "System packages", and those its apt-get line installs."""
    section = README.split("## System packages", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `([a-z0-9.+-]+)`:", section, re.MULTILINE)
    (install,) = [line for line in section.splitlines() if line.startswith("apt-get update && apt-get install ")]
    installed = [word for word in install.split("apt-get install ", 1)[1].split() if not word.startswith("-")]
    return listed, installed


def _ci_packages() -> set[str]:
    """The packages `.ci/run` installs: its command -> package table and its extra `missing+=(...)` lines."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    table = script.split("declare -A NEEDED=(", 1)[1].split("\n)", 1)[0]
    return set(re.findall(r"^\s*\[[^\]]+\]=([a-z0-9.+-]+)", table, re.MULTILINE)) | set(re.findall(r"missing\+=\(([a-z0-9.+-]+)\)", script))


def test_readme_system_packages_are_what_ci_installs() -> None:
    listed, installed = _readme_packages()
    assert len(listed) == len(set(listed)), "a package is listed twice"
    assert listed == installed, "the apt-get line and the list below it differ"
    assert set(listed) == _ci_packages()


def test_every_tool_a_test_requires_names_a_listed_package() -> None:
    from conftest import DEBIAN_PACKAGES

    listed, _ = _readme_packages()
    assert set(DEBIAN_PACKAGES.values()) <= set(listed)


def test_the_demos_first_lint_passes_so_make_demo_goes_on() -> None:
    """make stops at the first failing command: the demo's lint of the scenario examples must exit 0."""
    import shlex
    import subprocess
    import sys

    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = next(line for line in makefile.splitlines() if "/bin/mcpspec lint --ignore" in line)
    words = shlex.split(line.strip().lstrip("@"))
    assert words[0] == "$(VENV)/bin/mcpspec"
    done = subprocess.run([sys.executable, "-m", "mcpspec", *words[1:]], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
