"""`mcpspec check --within` at scale: a 1,000-server spec against a 200-rule boundary (target < 2 s).

    python benchmarks/boundary.py [--servers 1000] [--rules 200]

The boundary's one `any-server` ceiling allows 200 egress rules (names, wildcards, IPv4 and IPv6
CIDRs, on single ports or every port); each spec server allows four destinations inside them and
one outside, and has a mount, a secret, an image from the boundary's registry and a tool whose
argument rules the boundary's refuse rule is compared with (contained). Prints the time to resolve both files and the time of
the check itself, best of three. `--open` gives every server and the boundary `default: allow`
with `deny: [@private, @metadata]` (the slowest shape: every name either file writes is a class
to compare, and the pair is contained, so no witness cuts the search short).
"""


from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from mcpspec import api
from mcpspec.boundary.check import check

OPEN = '    egress:\n      default: allow\n      deny: ["@private", "@metadata"]\n      allow:\n'


def boundary(rules: int) -> str:
    allow = []
    for i in range(rules):
        kind = i % 4
        allow.append(
            [f"api{i}.corp.example:443", f"*.team{i}.corp.example:*", f"10.{i % 256}.{i // 256}.0/24:5432", f"2001:db8:{i:x}::/48"][kind]
        )
    lines = ["version: 1", "project: org", "images:", "  acme: ghcr.io/acme", "secrets:", "  vault-1h: {provider: vault, ref: any, ttl: 1h}", "servers:", "  any-server:", "    command: [any]"]
    lines += ["    tools:", "      write_file:", "        effects: [writes_local]", '        when: [{if: {arg: path, glob: "/etc/**"}, then: refuse}]']
    lines += ["    egress:", "      allow:"] + [f'        - "{entry}"' for entry in allow]
    lines += ["    mounts:", "      - {from: /srv/mcp, to: /srv, mode: rw}", "    secrets:", "      - {use: vault-1h, as: {env: X}}"]
    return "\n".join(lines) + "\n"


def spec(servers: int, rules: int) -> str:
    lines = ["version: 1", "project: big", "secrets:", "  token: {provider: vault, ref: kv/x, ttl: 30m}", "servers:"]
    for i in range(servers):
        r = (i * 4) % rules
        allow = [f"api{r}.corp.example:443", f"x{i}.team{r + 1}.corp.example:443", f"10.{(r + 2) % 256}.{(r + 2) // 256}.7:5432", f"[2001:db8:{r + 3:x}::9]:443"]
        allow.append(f"outside{i}.example.net:443")
        lines += [f"  s{i}:", f"    command: [server{i}]", f"    image: ghcr.io/acme/server{i}:1.0", "    egress:", "      allow:"] + [f'        - "{entry}"' for entry in allow]
        lines += ["    tools:", "      write_file:", "        effects: [writes_local]", "        when:", '          - {if: {arg: path, glob: "/etc/**"}, then: refuse}',
                  f'          - {{if: {{arg: path, glob: "/workspace/s{i}/**"}}, then: allow}}', "        otherwise: refuse"]
        lines += ["    mounts:", f"      - {{from: /srv/mcp/s{i}, to: /data}}", "    secrets:", "      - {use: token, as: {env: TOKEN}}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--open", action="store_true", help="default: allow on both sides (contained)")
    args = parser.parse_args()
    spec_text, boundary_text = spec(args.servers, args.rules), boundary(args.rules)
    if args.open:
        spec_text = spec_text.replace("    egress:\n      allow:\n", OPEN)
        boundary_text = boundary_text.replace("    egress:\n      allow:\n", OPEN)
    with tempfile.TemporaryDirectory() as directory:
        spec_file, boundary_file = Path(directory, "spec.yaml"), Path(directory, "boundary.yaml")
        spec_file.write_text(spec_text, encoding="utf-8")
        boundary_file.write_text(boundary_text, encoding="utf-8")
        best_total = best_check = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            plan, limits = api.load(spec_file), api.load(boundary_file)
            resolved = time.perf_counter()
            found = check(plan, limits)
            done = time.perf_counter()
            best_total, best_check = min(best_total, done - started), min(best_check, done - resolved)
    expected = 0 if args.open else args.servers
    assert len(found) == expected, f"expected {expected} excesses, found {len(found)}"
    print(f"{args.servers} servers against {args.rules} rules: {len(found)} excesses; check {best_check * 1000:.0f} ms, resolve both files and check {best_total:.2f} s")


if __name__ == "__main__":
    main()
