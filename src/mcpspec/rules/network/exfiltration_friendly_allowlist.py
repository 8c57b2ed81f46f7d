"""
## What it does
Flags egress allow entries that let data out to hosts anyone can read or
create: paste, webhook, request-capture and tunnel services (`pastebin.com`,
`webhook.site`, `*.ngrok.io`, `*.trycloudflare.com`, `*.pipedream.net`,
`hooks.slack.com`, `discord.com`, ...), user-content hosts (`gist.github.com`,
`*.githubusercontent.com`), wildcards over shared hosting (`*.amazonaws.com`,
`*.cloudfront.net`, `*.blob.core.windows.net`, `*.googleapis.com`,
`*.herokuapp.com`, `*.vercel.app`, `*.netlify.app`, `*.workers.dev`, ...),
a wildcard directly under a public suffix (`*.co.uk`), and public IP ranges
wider than a /24 (IPv6: /48).

## Why is this risky
An allowlist only stops exfiltration if every host on it is controlled by
someone you trust. Anyone can open a webhook.site inbox, a gist, an ngrok
tunnel or an S3 bucket in a minute, so an injected instruction such as "post
the file to https://attacker.ngrok.io" or "upload it to
attacker-bucket.s3.amazonaws.com" passes the filter. Name the exact hosts the
server needs (`my-bucket.s3.eu-west-1.amazonaws.com:443`) instead.

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["docs.python.org:443", "*.ngrok.io:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["docs.python.org:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
```

## References
- OWASP MCP Top 10: MCP10 Context Injection & Over-Sharing, MCP06 Prompt Injection via Contextual Payloads
- OWASP Top 10 for LLM Applications: LLM02 Sensitive Information Disclosure
- CWE-200 Exposure of Sensitive Information to an Unauthorized Actor
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import Draft, merged
from mcpspec.rules.network._common import host_network
from mcpspec.spec.values import Destination

# Paste, webhook, request-capture, tunnel and user-content services: each entry with its subdomains.
EXFIL_HOSTS = (
    "pastebin.com", "paste.ee", "hastebin.com", "dpaste.com", "dpaste.org", "rentry.co", "rentry.org", "termbin.com",
    "ix.io", "0x0.st", "paste.rs", "pastes.dev", "justpaste.it", "controlc.com", "privatebin.net", "ghostbin.co",
    "transfer.sh", "temp.sh", "file.io", "catbox.moe", "telegra.ph",
    "webhook.site", "requestbin.com", "requestbin.net", "requestcatcher.com", "hookbin.com", "beeceptor.com",
    "pipedream.net", "postb.in", "ptsv2.com", "ptsv3.com", "interact.sh", "oast.fun", "oast.pro", "oast.live",
    "oast.site", "oast.online", "oast.me", "oastify.com", "burpcollaborator.net", "canarytokens.com",
    "ngrok.io", "ngrok.app", "ngrok.dev", "ngrok-free.app", "ngrok-free.dev", "trycloudflare.com", "loca.lt",
    "localtunnel.me", "serveo.net", "localhost.run", "lhr.life", "bore.pub",
    "gist.github.com", "githubusercontent.com", "hooks.slack.com", "discord.com", "discordapp.com", "api.telegram.org",
)
# Hosting where any customer picks a subdomain: a wildcard over them admits everyone's hosts.
SHARED_HOSTING = (
    "amazonaws.com", "cloudfront.net", "blob.core.windows.net", "web.core.windows.net", "azurewebsites.net",
    "azureedge.net", "googleapis.com", "appspot.com", "web.app", "firebaseapp.com", "herokuapp.com", "vercel.app",
    "netlify.app", "workers.dev", "pages.dev", "r2.dev", "github.io", "gitlab.io", "onrender.com", "fly.dev",
    "glitch.me", "repl.co", "replit.app", "deno.dev", "surge.sh", "ondigitalocean.app", "digitaloceanspaces.com",
    "railway.app", "backblazeb2.com", "wasabisys.com",
)
# Second-level labels that ccTLD registries sell under (co.uk, com.au, ne.jp, ...), and other public suffixes.
PUBLIC_SECOND_LEVEL = ("co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go", "gob", "mil", "nic", "ltd", "plc")
PUBLIC_SUFFIXES = ("eu.org", "us.com", "uk.com", "eu.com", "de.com", "cn.com", "za.com", "qc.com")
EXFIL_KIND = "paste, webhook, tunnel or user-content service"
WIDEST_PUBLIC = {4: 24, 6: 48}


def check(plan: Plan) -> Iterator[Finding]:
    return merged(
        Draft(facts.entry_path(server, "allow", position), server.name, f"{{who}} {{allows|allow}} {entry.text}, {why}")
        for server in facts.launched(plan)
        for position, entry in enumerate(server.egress.allow)
        if (why := problem(entry))
    )


def _ancestors(domain: str) -> list[str]:
    """``a.b.example.com`` -> [a.b.example.com, b.example.com, example.com, com]."""
    labels = domain.split(".")
    return [".".join(labels[index:]) for index in range(len(labels))]


# Every ancestor domain of a listed service or host, mapped to the listed names under it,
# so a wildcard entry is checked by one lookup instead of a scan of both lists.
_UNDER: dict[str, list[str]] = {}
for _name in EXFIL_HOSTS + SHARED_HOSTING:
    for _ancestor in _ancestors(_name):
        _UNDER.setdefault(_ancestor, []).append(_name)
_EXFIL = frozenset(EXFIL_HOSTS)
_SHARED = frozenset(SHARED_HOSTING)


def _listed_ancestors(domain: str) -> list[str]:
    """The ``_ancestors`` of ``domain`` that a listed service or host lies under (in ``_UNDER``), in the same order.

    Found from the top label down, stopping at the first that is not in ``_UNDER``: no ancestor
    below it can be, since every ancestor of an ``_UNDER`` name is one too. Most entries stop
    after a lookup or two (``api.example.com``: ``com``, then ``example.com``).
    """
    found: list[str] = []
    dot = len(domain)
    while dot >= 0:
        dot = domain.rfind(".", 0, dot)
        suffix = domain[dot + 1:]
        if suffix not in _UNDER:
            break
        found.append(suffix)
    found.reverse()
    return found


def problem(entry: Destination) -> str:
    """Why an entry lets data out to hosts anyone controls ('' when it does not)."""
    return _problem(entry.kind, entry.host)


@functools.lru_cache(maxsize=65536)  # asked of every allow entry twice: by the graph and by this rule
def _problem(kind: str, host: str) -> str:
    """``problem`` of an entry: a fact of its kind and host alone, remembered by those (a key hashed in C)."""
    if kind == "cidr":
        return wide_public(host)
    wildcard = kind == "wildcard"
    host = host.removeprefix("*.")
    ancestors = _listed_ancestors(host)
    if not _EXFIL.isdisjoint(ancestors):
        return f"a {EXFIL_KIND} anyone can write to"
    if not wildcard:
        return ""
    admitted = _UNDER.get(host, [])
    exfil = next((name for name in admitted if name in _EXFIL), None)
    if exfil is not None:
        return f"which admits {exfil}, a {EXFIL_KIND} anyone can write to"
    if public_suffix(host):
        return f"a wildcard directly under the public suffix {host}: every domain registered there"
    shared = next((name for name in ancestors if name in _SHARED), None) or next((name for name in admitted if name in _SHARED), None)
    if shared is not None:
        return f"a wildcard over shared hosting ({shared}) where anyone can create a host"
    return ""


def public_suffix(domain: str) -> bool:
    labels = domain.split(".")
    if len(labels) == 1 or domain in PUBLIC_SUFFIXES:
        return True
    return len(labels) == 2 and labels[0] in PUBLIC_SECOND_LEVEL and len(labels[1]) == 2


def wide_public(host: str) -> str:
    """Why a CIDR entry (its ``host``) is too wide to allow ('' when it is not)."""
    network = host_network(host)
    if network.prefixlen >= WIDEST_PUBLIC[network.version]:
        return ""
    if any(facts.subnet_of(network, private) for private in facts.PRIVATE_NETWORKS):
        return ""
    return f"a public address range wider than /{WIDEST_PUBLIC[network.version]} that holds hosts anyone can rent"


RULE = Rule(
    id="NW004",
    slug="exfiltration-friendly-allowlist",
    severity="medium",
    summary="An egress allow entry admits hosts anyone can create or write to",
    check=check,
    doc=__doc__ or "",
)
