"""`mcpspec check --within` attacked: spec/boundary pairs the check passed while the artifacts the
spec builds reach, mount or keep what the boundary does not allow.

Each escape is shown twice: the check on the pair (exit 1 and the excess at its spec line), and,
where this machine can run it, the attack against the generated artifacts themselves (the spec's
launcher or squid lets it through; for the resolution case the boundary's own squid refuses it),
so a test that passes proves both that the escape is real and that the check now names it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpspec.api import load_text
from mcpspec.boundary.check import Excess, check

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Listener, Sandbox, call_tools

import test_target_bwrap_real

sandbox = test_target_bwrap_real.sandbox  # the fixture: bwrap, squid and the probe's SDK copy


def _check(spec: str, boundary: str) -> list[Excess]:
    return check(load_text(spec, "spec.yaml"), load_text(boundary, "boundary.yaml"))


def _server(body: str, top: str = "") -> str:
    return f"version: 1\nproject: p\n{top}servers:\n  fetch:\n    command: [fetch]\n{body}"


# --- egress.via: direct: the host network, whatever the entries say ---


def test_direct_egress_is_an_excess_whatever_its_entries() -> None:
    boundary = _server('    egress: {allow: ["*.acme.example:443", "198.18.0.0/15:443"], deny: ["@private"]}\n')
    for egress in ('{via: direct, allow: ["api.acme.example:443"]}', '{via: direct, allow: ["198.18.0.7:443"]}'):
        (excess,) = _check(_server(f"    egress: {egress}\n"), boundary)
        assert excess.code == "BX001" and excess.path == ("servers", "fetch", "egress", "via"), excess
        assert "egress.via: direct" in excess.message
    # An open boundary holds even a direct server; one with denies does not (bwrap filters nothing).
    assert _check(_server('    egress: {via: direct, allow: ["a.acme.example:443"]}\n'), _server("    egress: {default: allow}\n")) == []
    deny_both = "    egress: {default: allow, deny: ['@private', '@metadata']%s}\n"
    assert [e.code for e in _check(_server(deny_both % ", via: direct"), _server(deny_both % ""))] == ["BX001"]
    # No egress at all stays no network, even written with via: direct.
    assert _check(_server("    egress: {via: direct}\n"), boundary) == []


SITE = "    env: {set: {PYTHONPATH: /opt/site}}"


def test_a_direct_server_reaches_what_the_boundary_refuses_and_the_check_names_it(sandbox: Sandbox) -> None:
    allowed, denied = Listener("127.0.0.1"), Listener("127.0.0.2")
    try:
        spec = sandbox.spec("direct", f'{SITE}\n    egress: {{via: direct, allow: ["127.0.0.1:{allowed.port}"]}}')
        launcher = sandbox.build(spec, accept=("TG001",))
        (reached,) = call_tools(launcher, [("connect", {"host": "127.0.0.2", "port": denied.port})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
        assert reached["ok"] is True, reached  # the artifact lets the server reach 127.0.0.2
        text = spec.read_text(encoding="utf-8")
        boundary = text.replace("via: direct, ", "")  # the same ceiling, through the proxy
        found = check(load_text(text, str(spec)), load_text(boundary, "boundary.yaml"))
        assert [e.code for e in found] == ["BX001"], found
    finally:
        allowed.close()
        denied.close()
