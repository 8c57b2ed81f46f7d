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


# --- counts and lists the README states, against the registries they come from ---

_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


def test_the_rule_count_and_families_are_the_registrys() -> None:
    from mcpspec.rules.registry import all_rules

    rules = all_rules()
    counts = re.findall(r"\b(\d+) risk rules\b", README)
    assert counts and {int(n) for n in counts} == {len(rules)}, f"the README says {counts} risk rules; the registry has {len(rules)}"
    families = {rule.id[:2] for rule in rules}
    sentence = README.split(" risk rules in ", 1)[1].split("`mcpspec rules`", 1)[0]
    said = re.match(r"(\w+) families:", sentence)
    assert said is not None and _number(said[1]) == len(families)
    assert set(re.findall(r"\(([A-Z]{2})[,)]", sentence)) == families, "a family is missing from the README's list, or one that is not a family"
    graph = sorted(rule.id for rule in rules if rule.id.startswith("GR"))
    assert re.findall(r"graph rules \((GR\d{3})-(GR\d{3})\)", README) == [(graph[0], graph[-1])]


def test_every_target_list_is_the_target_registry() -> None:
    from mcpspec.targets import TARGET_NAMES
    from mcpspec.targets.client.formats import CLIENTS

    lists = re.findall(r"--target ([a-z0-9-]+(?:\|[a-z0-9-]+)+)", README)
    assert lists and all(names.split("|") == list(TARGET_NAMES) for names in lists), (lists, TARGET_NAMES)
    build = next(line for line in README.splitlines() if line.startswith("| `mcpspec build"))
    assert re.findall(r"`([a-z0-9-]+)`", build.split("compile for ", 1)[1].split("(", 1)[0]) == list(TARGET_NAMES)
    clients = re.findall(r"--client ([a-z0-9-]+(?:\|[a-z0-9-]+)+)", README)
    assert clients and all(names.split("|") == list(CLIENTS) for names in clients), (clients, list(CLIENTS))


def test_the_import_clients_are_the_importers() -> None:
    from mcpspec.importer.clients import CLIENTS

    counted = re.findall(r"one of (\w+) clients|the (\w+) client formats", README)
    assert len(counted) == 2 and all(_number(a or b) == len(CLIENTS) for a, b in counted), counted
    named = README.split("starts a spec from the MCP config a client already has:\n", 1)[1].split(" (`--from auto`", 1)[0]
    assert len(re.split(r", | or ", named.replace("\n", " "))) == len(CLIENTS), named


def test_the_commands_table_lists_every_command() -> None:
    import typer.main

    from mcpspec.cli import app

    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `mcpspec ([a-z-]+)", section, re.MULTILINE)
    commands = {name for name, command in typer.main.get_command(app).commands.items() if not command.hidden}  # type: ignore[attr-defined]
    assert len(listed) == len(set(listed)) and set(listed) == commands | {"--version", "-h"}
