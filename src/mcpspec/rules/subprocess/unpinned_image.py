"""
## What it does
Flags a server `image`, or a `lifecycle.template` that names an image, that is not pinned by an
`@sha256:` digest. A tag such as `:latest` or `:1.4` is a name the publisher can point at new content
at any time; only a digest names fixed bytes.

## Why is this risky
Whoever controls the tag (the publisher, or an attacker who took over their registry account) can
swap the server's code after you reviewed it, and the next launch runs the new code with every mount,
secret and network permission the spec grants. This is the rug pull of the postmark-mcp incident,
done at the image level; `:latest` also changes under you with every ordinary release.

## Example
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo:latest
    command: [acme-repo-mcp]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo:1.4.2@sha256:387c0df8c798400dbd2c33c93d40144c495e725b4bfbafa8375ab53c83e4d623
    command: [acme-repo-mcp]
```

## References
- OWASP MCP Top 10: MCP04 Software Supply Chain Attacks & Dependency Tampering; MCP03 Tool Poisoning (rug pulls)
- OWASP Top 10 for LLM Applications: LLM03 Supply Chain
- CWE-494: Download of Code Without Integrity Check; CWE-829: Inclusion of Functionality from Untrusted Control Sphere
- hadolint DL3007 (using latest)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who
from mcpspec.spec.models import IMAGE_PATTERN

_IMAGE = re.compile(IMAGE_PATTERN)


def check(plan: Plan) -> Iterator[Finding]:
    servers = list(launched(plan))
    for server in servers:
        if server.image is not None and "@sha256:" not in server.image:
            yield Finding(path=server.origin("image"), message=f"server '{server.name}' runs image '{server.image}' {_problem(server.image)}")
    templated = [server for server in servers if _unpinned_image(server.lifecycle.template)]
    for path, group in by_origin(templated, "lifecycle.template").items():
        template = group[0].lifecycle.template or ""
        yield Finding(path=path, message=f"lifecycle.template '{template}' of {who(group, in_full)} is an image {_problem(template)}")


def _unpinned_image(template: str | None) -> bool:
    """Whether a template is an image reference (not a named template such as 'python-3.12') without a digest."""
    if template is None or "@sha256:" in template or not _IMAGE.match(template):
        return False
    return "/" in template or ":" in template


def _problem(image: str) -> str:
    tag = _tag(image)
    if tag == "latest":
        return "by its mutable ':latest' tag, with no @sha256 digest"
    if tag is None:
        return "with no tag and no @sha256 digest (it means ':latest')"
    return f"by tag ':{tag}', with no @sha256 digest"


def _tag(image: str) -> str | None:
    last = image.split("@")[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


RULE = Rule(
    id="SP001",
    slug="unpinned-image",
    severity="high",
    summary="A server image or sandbox template is not pinned by digest",
    check=check,
    doc=__doc__ or "",
)
