"""The check's model of what the proxy refuses anyway (mcpspec.boundary.refused) against a real
squid with the generated configuration, in the network namespace of test_egress_special_ranges:
for every sample of every special range and two public addresses, the check says the spec
reaches the address exactly when squid answers it (200), and refuses it exactly when squid does
(403). A model that took away more than squid refuses would hide an excess; this test fails then.
"""

from __future__ import annotations

import pytest

from mcpspec.api import load_text
from mcpspec.boundary import egress, refused
from mcpspec.spec.values import parse_destination
from test_egress_special_ranges import PUBLIC_V4, PUBLIC_V6, SAMPLES, Lab, _authority, lab  # noqa: F401 (lab: the fixture)

EGRESS = [
    "{default: allow, via: proxy}",
    '{allow: ["0.0.0.0/0", "::/0"]}',
    '{default: allow, allow: ["127.0.0.0/8:8080", "[::1]:8080", "169.254.169.254:8080", "10.0.0.0/8:8080", "[fd00::/8]:8080"], deny: ["192.168.0.0/16"]}',
    '{allow: ["100.128.0.0/16:8080", "[2001:200::/32]:8080", "[::ffff:10.0.0.0/104]:8080"]}',
]


def reaches(spec_egress: str, authority: str) -> bool:
    """Whether the check finds the spec reaching ``authority``: an excess over a boundary that
    allows every destination but that one."""
    plan = load_text(f"version: 1\nproject: ranges\nservers:\n  probe:\n    command: [probe]\n    egress: {spec_egress}\n", "ranges.yaml")
    boundary = egress.policy("allow", [], [parse_destination(authority)])
    return bool(refused.leaks(plan.servers["probe"].egress, boundary, {}))


@pytest.mark.parametrize("spec_egress", EGRESS, ids=["default-allow", "all-addresses", "listed-special", "listed-public"])
def test_the_check_reaches_exactly_what_squid_lets_through(lab: Lab, spec_egress: str) -> None:  # noqa: F811
    addresses = [sample.address for sample in SAMPLES if sample.tcp] + [PUBLIC_V4, PUBLIC_V6]
    requests = [("GET", _authority(address)) for address in addresses]
    got = lab.statuses(lab.squid_conf(spec_egress), requests)
    model = {address: 200 if reaches(spec_egress, _authority(address)) else 403 for address in addresses}
    squid = dict(zip(addresses, got, strict=True))
    assert {a: (model[a], squid[a]) for a in addresses if model[a] != squid[a]} == {}
    assert 200 in squid.values() and 403 in squid.values()
