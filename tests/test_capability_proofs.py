"""A target's capability matrix says `full` only where a test attacks the control."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcpspec.targets import TARGET_NAMES, get_target

REPO = Path(__file__).resolve().parent.parent


def _test_names(relative: str) -> set[str]:
    tree = ast.parse((REPO / relative).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("name", TARGET_NAMES)
def test_every_full_control_names_the_tests_that_attack_it(name: str) -> None:
    capabilities = get_target(name).capabilities
    for control, capability in capabilities.items():
        if capability.level == "full":
            assert capability.proof, f"{name}: {control} is 'full' but no test attacks it"
        for proof in capability.proof:
            relative, _, test = proof.partition("::")
            assert relative.startswith("tests/") and test, proof
            assert test in _test_names(relative), f"{name}: {control} names {proof}, which does not exist"


def test_vscode_s_sandbox_matrix_names_tests_that_exist() -> None:
    from mcpspec.targets.client.vscode_sandbox import CAPABILITIES

    for control, capability in CAPABILITIES.items():
        assert capability.level != "full" or capability.proof, f"client --via srt: {control} is 'full' but no test attacks it"
        for proof in capability.proof:
            relative, _, test = proof.partition("::")
            assert test in _test_names(relative), f"client --via srt: {control} names {proof}, which does not exist"
