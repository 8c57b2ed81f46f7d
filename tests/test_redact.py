"""redact() skips the regex when no secret marker is present: it must mask exactly what the regex masks."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpspec.redact import SECRET_VALUE, _mask, _might_hold_secret, holds_secret, redact

SAMPLES = [
    "ghp_" + "a" * 36, "gho_" + "b" * 30, "ghs_" + "c" * 25, "ghr_" + "d" * 22, "ghu_" + "e" * 40,
    "github_pat_" + "x" * 30, "xoxb-1234567890-abc", "xoxa-" + "1" * 12, "xoxp-" + "2" * 12, "xoxr-" + "3" * 12,
    "AKIA" + "A" * 16, "ASIA" + "B" * 16, "sk-ant-" + "k" * 20, "sk-proj-" + "p" * 24, "sk-" + "q" * 24,
    "glpat-" + "g" * 22, "npm_" + "n" * 36, "AIza" + "z" * 35, "-----BEGIN RSA PRIVATE KEY-----",
    "postgres://admin:hunter2@db", "eyJhbGciOiJI.eyJzdWIiOiIx.sig",
]


def test_every_sample_is_masked_and_matches_the_regex() -> None:
    for sample in SAMPLES:
        text = f"token {sample} here"
        assert SECRET_VALUE.search(text), sample
        assert redact(text) == SECRET_VALUE.sub(_mask, text) != text or sample.startswith("-----BEGIN")


@settings(max_examples=200, derandomize=True, suppress_health_check=[HealthCheck.too_slow])  # a loaded CI machine is slow, not wrong
@given(st.lists(st.one_of(st.sampled_from(SAMPLES), st.sampled_from(["gh", "ghp_", "gho", "through", "sk", "xox", "://", "AK", " ", "_", "-"]), st.text(max_size=12)), max_size=8))
def test_the_fast_path_never_changes_the_result(parts: list[str]) -> None:
    text = "".join(parts)
    assert redact(text) == SECRET_VALUE.sub(_mask, text)
    assert holds_secret(text) == (SECRET_VALUE.search(text) is not None)


@settings(max_examples=300, derandomize=True, suppress_health_check=[HealthCheck.too_slow])  # a loaded CI machine is slow, not wrong
@given(st.from_regex(SECRET_VALUE, fullmatch=True))
def test_every_secret_shape_passes_the_precheck(secret: str) -> None:
    """The precheck holds a substring of every alternative of SECRET_VALUE, or redact() would skip a secret."""
    assert _might_hold_secret(secret)
    assert _might_hold_secret(f"x {secret} y")
