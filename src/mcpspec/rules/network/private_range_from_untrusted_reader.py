"""
## What it does
Flags a launched server that reads untrusted content (a `reads_untrusted`
tool, or `kind: browser` / `kind: search`) and can reach private address
ranges (10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, 100.64/10, fc00::/7,
fe80::/10, ...): either egress defaults to allow without denying them on every
port, or an allow entry overlaps them or names a private-use domain
(`*.internal`, `*.local`, `*.cluster.local`, `*.home.arpa`, ...). Cloud
metadata addresses are left to NW001. The ranges are those of the `@private`
preset (listed in full below): `deny: ["@private"]` refuses all of them on every
port, and the JSON output lists what a finding leaves open in its `items`.

## Why is this risky
This is server-side request forgery. A web page, an issue comment or a search
result can tell the model to "fetch" `http://10.0.0.12:8080/admin` or
`http://127.0.0.1:2375`, and the server makes that request from inside the
network: internal dashboards, databases, the Docker API and the Kubernetes
API answer to it. The fetch and Puppeteer reference servers warn about this in
their READMEs.

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    kind: search
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["10.0.0.0/8", "docs.python.org:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    kind: search
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["docs.python.org:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
```

## References
- MCP Security Best Practices: Server-Side Request Forgery (SSRF)
- RFC 9728 §7.7 (blocking private ranges); RFC 1918, RFC 4193, RFC 6761
- OWASP MCP Top 10: MCP06 Prompt Injection via Contextual Payloads
- CWE-918 Server-Side Request Forgery
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.presets import PRIVATE, doc_section
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import IPNetwork
from mcpspec.rules.grouping import Draft, listing, merged
from mcpspec.rules.network._common import allow_item_path, allow_items, deny_covers_network, host_network, item_text
from mcpspec.spec.values import Destination

# Names reserved for private use or commonly served by internal resolvers only.
PRIVATE_SUFFIXES = ("localhost", "internal", "local", "lan", "home.arpa", "intranet", "corp", "private", "cluster.local")
_PRIVATE_NAMES = frozenset(PRIVATE_SUFFIXES)
_PRIVATE_TAILS = tuple(f".{suffix}" for suffix in PRIVATE_SUFFIXES)


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        related = untrusted_tools(server)
        if not related and not facts.reads_untrusted(server):  # a tool that reads untrusted content is enough
            continue
        if facts.egress_open(server):
            open_to = [str(net) for net in PRIVATE.networks if not deny_covers_network(server, net)]
            if open_to:
                total = len(PRIVATE.networks)
                what = listing(open_to) if len(open_to) <= 2 else f"{'all' if len(open_to) == total else f'{len(open_to)} of the'} {total} ranges of {PRIVATE.ref}"
                yield Draft(
                    server.origin("egress.default"), server.name,
                    f"{{who}} {{reads|read}} untrusted content and may reach private ranges because egress defaults to allow "
                    f'and egress.deny leaves {what} open; add "{PRIVATE.ref}" to egress.deny',
                    related, items=tuple(open_to),
                )
        for index, entries in allow_items(server.egress):
            hits = [entry for entry in entries if reaches_private(server, entry)]
            if hits:
                where = "reaches a private range" if any(entry.kind == "cidr" for entry in hits) else "is a private-use name"
                yield Draft(
                    allow_item_path(server, index), server.name,
                    f"{{who}} {{reads|read}} untrusted content and {{allows|allow}} {item_text(entries)}, which {where}",
                    related, items=tuple(entry.text for entry in hits) if hits[0].preset else (),
                )


def reaches_private(server: EffectiveSandbox, entry: Destination) -> bool:
    if entry.kind != "cidr":
        host = entry.host.removeprefix("*.")
        if entry.kind == "domain" and host in facts.METADATA_HOSTS:
            return False
        return private_name(host)
    return _private_range(entry.host) and not deny_covers_network(server, host_network(entry.host))


def private_name(host: str) -> bool:
    """Whether ``host`` is a private-use name or one of its subdomains (see ``domain_under``)."""
    return host in _PRIVATE_NAMES or host.endswith(_PRIVATE_TAILS)


@functools.lru_cache(maxsize=1024)
def _private_range(host: str) -> bool:
    """Whether a CIDR entry (its ``host``) overlaps a private range and is not inside one metadata address:
    a fact of the entry's text alone, and the same entries recur across servers (asked 10,000 times at 10,000 servers)."""
    network = host_network(host)
    return not metadata_only(network) and any(facts.networks_overlap(network, private) for private in PRIVATE.networks)


def metadata_only(network: IPNetwork) -> bool:
    """An entry inside one metadata address is NW001's to report, not this rule's."""
    return any(facts.subnet_of(network, metadata) for metadata in facts.METADATA_NETWORKS)


def untrusted_tools(server: EffectiveSandbox) -> tuple[Related, ...]:
    """A Related per tool that reads untrusted content (``facts.tools_with``, at ``facts.tool_path``), in one pass over the tools."""
    return tuple([Related((*server.path, "tools", name), f"tool '{name}' reads untrusted content") for name, tool in server.tools.items() if "reads_untrusted" in tool.effects])


RULE = Rule(
    id="NW003",
    slug="private-range-from-untrusted-reader",
    severity="high",
    summary="A server reading untrusted content can reach private address ranges",
    check=check,
    doc=(__doc__ or "") + doc_section("private"),
)
