"""What the secrets rules share: naming a secret's shape, and env settings that
``defaults`` may hand to several servers at one place in the file."""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan, SecretGrant
from mcpspec.rules.base import Related
from mcpspec.rules.facts import SECRET_ENV_NAME, launched
from mcpspec.rules.grouping import commas, quoted, who
from mcpspec.spec.models import Secret

# The shapes of facts.SECRET_VALUE, each with a name for messages (never the value).
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}", "a GitHub token"),
        (r"xox[abpr]-[A-Za-z0-9-]{10,}", "a Slack token"),
        (r"(AKIA|ASIA)[A-Z0-9]{16}", "an AWS access key ID"),
        (r"sk-ant-[A-Za-z0-9_-]{10,}", "an Anthropic API key"),
        (r"sk-(proj-)?[A-Za-z0-9_-]{20,}", "an OpenAI-style API key"),
        (r"glpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
        (r"npm_[A-Za-z0-9]{30,}", "an npm token"),
        (r"AIza[0-9A-Za-z_-]{35}", "a Google API key"),
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "a private key"),
        (r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", "a URL with a password"),
        (r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.", "a JWT"),
    )
)


def shape(value: str) -> str:
    """What a secret-looking value looks like: ``a GitHub token``."""
    for pattern, label in _SHAPES:
        if pattern.search(value):
            return label
    return "a secret"


# Words of a variable name that mark a secret. facts.SECRET_ENV_NAME matches anywhere in
# the name, so GIT_AUTHOR_NAME (AUTH) or KEYBOARD_LAYOUT (KEY) would look secret; whole
# words of the name do not have that problem.
_SECRET_WORDS = frozenset({"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASS", "PWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "DSN", "BEARER"})
_SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIALS")


def secret_looking_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret: ``GITHUB_TOKEN``, ``SSH_AUTH_SOCK``."""
    upper = name.upper()
    if SECRET_ENV_NAME.search(upper) is None:
        return False
    words = [word for word in re.split(r"[^A-Z0-9]+", upper) if word]
    return "DATABASE_URL" in upper or any(word in _SECRET_WORDS or word.endswith(_SECRET_SUFFIXES) for word in words)


# Cloud settings that are not credentials: a region or a project id gives nothing away.
NOT_A_CREDENTIAL = re.compile(r"(_REGION|_ZONE|_PROJECT|_PROJECT_ID|_LOCATION|_OUTPUT|_PAGER|_ENDPOINT_URL(_[A-Z0-9_]+)?)$")


def whose(path: SpecPath, servers: list[EffectiveSandbox]) -> str:
    """``server 'a'`` or ``servers 'a', 'b' (from defaults)``: the servers a setting at ``path`` configures."""
    suffix = " (from defaults)" if path[0] == "defaults" else ""
    return f"{who(servers, commas)}{suffix}"


def inherited_names(plan: Plan) -> Iterator[tuple[SpecPath, str, EffectiveSandbox]]:
    """(path of the list entry, name, server) for each name of an ``env.inherit`` list."""
    for server in launched(plan):
        inherit = server.env.inherit
        if isinstance(inherit, tuple):
            origin = server.origin("env.inherit")
            for index, name in enumerate(inherit):
                yield (*origin, index), name, server


def set_names(plan: Plan) -> Iterator[tuple[SpecPath, str, EffectiveSandbox]]:
    """(path of the key, name, server) for each variable of ``env.set``."""
    for server in launched(plan):
        if server.env.set:
            origin = server.origin("env.set")
            for name in server.env.set:
                yield (*origin, name), name, server


Bound = tuple[tuple[EffectiveSandbox, SecretGrant], ...]


def users(bound: Bound) -> str:
    """``'a', 'b'``: the servers of ``bound``, each once."""
    return commas(quoted(dict.fromkeys(server.name for server, _ in bound)))


def uses(bound: Bound) -> tuple[Related, ...]:
    """Where each binding of ``bound`` hands the secret to its server."""
    return tuple(Related(grant.path, f"used by server {server.name!r}") for server, grant in bound)


def bindings(plan: Plan) -> dict[str, Bound]:
    """Secret name -> every server binding of it; one pass over the servers per plan (several rules ask)."""
    found = plan.derived.get("secret_bindings")
    if not isinstance(found, dict):
        found = plan.derived["secret_bindings"] = _bindings(plan)
    return found


def _bindings(plan: Plan) -> dict[str, Bound]:
    found: dict[str, list[tuple[EffectiveSandbox, SecretGrant]]] = {name: [] for name in plan.spec.secrets}
    for server in plan.servers.values():
        for grant in server.secrets:
            found.setdefault(grant.name, []).append((server, grant))
    return {name: tuple(bound) for name, bound in found.items()}


def in_use(plan: Plan) -> Iterator[tuple[str, Secret, Bound]]:
    """(name, secret, its bindings) for each declared secret some server binds, in file order."""
    bound_by = bindings(plan)
    for name, secret in plan.spec.secrets.items():
        if bound_by[name]:
            yield name, secret, bound_by[name]
