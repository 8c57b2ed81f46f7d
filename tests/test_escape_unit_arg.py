"""``unit_arg`` replaces each character on its own, exactly as the translation table it
replaced did (every escaping's round trip through systemd is in test_escaping_roundtrip.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpspec.targets.escape import Unrepresentable, unit_arg, unit_env

_ENV = str.maketrans({"\\": "\\\\", '"': '\\"', "%": "%%", **{chr(c): f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}})
_ARG = {**_ENV, ord("$"): "$$"}
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00") | st.sampled_from('\\"%$\n\t\x1f\x7f\x01x'))


@settings(max_examples=2000, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=TEXT)
@example(value='\\"%$\n\\x0a\\\\$$%%"')
def test_unit_arg_is_the_per_character_translation(value: str) -> None:
    assert unit_arg(value) == '"' + value.translate(_ARG) + '"'
    assert unit_arg(value, variables=False) == '"' + value.translate(_ENV) + '"'
    assert unit_env("NAME", value) == '"' + f"NAME={value}".translate(_ENV) + '"'


def test_a_nul_is_refused() -> None:
    with pytest.raises(Unrepresentable):
        unit_arg("a\x00b")
