"""Shared facts and questions about a Plan that several rules ask.

Data here comes from the project's research notes (cloud metadata endpoints,
never-mount credential paths, secret-shaped values); queries return plain
answers, never findings.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Literal

from mcpspec.addresses import METADATA_HOSTS, METADATA_NETWORKS, PRIVATE_NETWORKS, IPNetwork, networks_overlap, subnet_of
from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import AGENT_TOKEN, RUN_TOKEN, EffectiveMount, EffectiveSandbox, Plan
from mcpspec.redact import holds_secret
from mcpspec.spec.models import Tool
from mcpspec.spec.values import Destination

# --- paths ---

CREDENTIAL_PATHS = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.boto", "~/.azure", "~/.oci", "~/.aliyun",
    "~/.config/doctl", "~/.fly", "~/.config/hcloud", "~/.terraform.d/credentials.tfrc.json", "~/.vault-token",
    "~/.pulumi/credentials.json", "~/.databrickscfg", "~/.s3cfg", "~/.kube", "/etc/kubernetes", "/var/lib/kubelet",
    "/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io", "~/.docker/config.json", "~/.npmrc", "~/.yarnrc.yml",
    "~/.pypirc", "~/.config/pip/pip.conf", "~/.pip/pip.conf", "~/.gem/credentials", "~/.cargo/credentials",
    "~/.cargo/credentials.toml", "~/.m2/settings.xml", "~/.gradle/gradle.properties", "~/.nuget/NuGet/NuGet.Config",
    "~/.composer/auth.json", "~/.netrc", "~/.git-credentials", "~/.gitconfig", "~/.config/git/credentials",
    "~/.config/gh", "~/.config/glab-cli", "~/.pgpass", "~/.my.cnf", "~/.dbt/profiles.yml", "~/.snowsql",
    "~/.bash_history", "~/.zsh_history", "~/.local/share/fish", "~/.python_history", "~/.psql_history",
    "~/.mysql_history", "~/.node_repl_history", "~/Library/Keychains", "~/.local/share/keyrings",
    "~/.password-store", "~/.config/op", "~/.bitcoin", "~/.ethereum/keystore", "~/.config/solana/id.json",
    "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssl/private", "/root",
)
CONTAINER_SOCKETS = (
    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock",
    "/var/run/crio/crio.sock", "/var/lib/docker", "/run/user/{uid}/docker.sock",
)
AGENT_CONFIG_PATHS = (
    "~/.cursor", "~/.claude", "~/.claude.json", "~/.codex", "~/.gemini", "~/.codeium", "~/.kiro", "~/.mcp-auth",
    "~/.config/Code/User", "~/Library/Application Support/Claude", "~/.continue", "~/.config/zed",
)
# Project-level client config names, matched as a path component anywhere.
AGENT_CONFIG_NAMES = (".mcp.json", ".cursor", ".claude", ".vscode", ".codex", ".gemini", ".windsurf")
BROWSER_PROFILE_PATHS = (
    "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware", "~/.config/microsoft-edge",
    "~/.mozilla", "~/Library/Application Support/Google/Chrome", "~/Library/Application Support/Firefox",
    "~/Library/Application Support/BraveSoftware", "~/Library/Application Support/Microsoft Edge",
    "~/Library/Cookies", "~/Library/Safari", "~/.cache/ms-playwright", "~/Library/Caches/ms-playwright",
)


def components(path: str) -> list[str]:
    """``~/.ssh/id`` -> ['~', '.ssh', 'id']; ``/a/b`` -> ['', 'a', 'b']; ``/`` -> ['']."""
    return [""] if path == "/" else path.rstrip("/").split("/")


def contains(outer: str, inner: str) -> bool:
    """Whether host path ``outer`` is ``inner`` or one of its ancestors.

    Both are normalized already. ``/`` contains everything, home paths
    included; ``/home`` and ``/root`` contain ``~`` paths, since a user's home
    lives under one of them.
    """
    if outer == "/":
        return True
    if inner.startswith("~") and outer in ("/home", "/root", "/Users"):
        return True
    # Component by component, as string prefixes: what components() splits, compared without the lists.
    a, b = outer.rstrip("/"), inner.rstrip("/")
    return b == a or b.startswith(a + "/")


def overlaps(a: str, b: str) -> bool:
    """Whether either path contains the other: mounting either exposes what they share."""
    return contains(a, b) or contains(b, a)


UID = "{uid}"
# Directories under which the second component is one user's home.
_HOME_PARENTS = ("/home", "/Users")


def spellings(source: str) -> tuple[str, ...]:
    """``source`` and the other spellings of the same host place.

    ``/home/alice/.ssh`` is ``~/.ssh`` for alice, and ``/var/run`` is a symlink to ``/run``.
    """
    forms = [source]
    parts = components(source)
    if len(parts) >= 3 and "/" + parts[1] in _HOME_PARENTS:
        forms.append("/".join(["~", *parts[3:]]))
    elif len(parts) >= 2 and parts[1] == "root":
        forms.append("/".join(["~", *parts[2:]]))
    if source == "/var/run" or source.startswith("/var/run/"):
        forms.append(source.removeprefix("/var"))
    elif source == "/run" or source.startswith("/run/"):
        forms.append("/var" + source)
    return tuple(forms)


def _instantiate(pattern: str, source: str) -> str:
    """Fill a ``{uid}`` component of ``pattern`` with the source's component at that place."""
    if UID not in pattern:
        return pattern
    theirs = components(source)
    parts = [theirs[i] if part == UID and i < len(theirs) else ("0" if part == UID else part) for i, part in enumerate(components(pattern))]
    return "/".join(parts)


def overlapping(source: str, patterns: tuple[str, ...]) -> list[tuple[str, bool]]:
    """(pattern, mount is inside it) for each pattern that host path ``source`` overlaps, in any spelling.

    "Inside" means the mount is the pattern's path or below it; otherwise the
    mount is an ancestor that holds it.
    """
    found: list[tuple[str, bool]] = []
    forms = spellings(source)
    for pattern in patterns:
        for form in forms:
            concrete = _instantiate(pattern, form)
            # /root "contains" ~ only when the user is root: no reason to assume it.
            if (concrete.startswith("~") or not form.startswith("~")) and contains(concrete, form):
                found.append((pattern, True))
                break
            if contains(form, concrete):
                found.append((pattern, False))
                break
    return found


TEMPLATE_TOKENS = (AGENT_TOKEN, RUN_TOKEN)


def source_contains(source: str, path: str) -> bool:
    """Like :func:`contains`, with ``{agent}`` and ``{run_id}`` components of a workspace
    dir's source matching any name, and ``path`` in any of its spellings."""
    if not any(token in source for token in TEMPLATE_TOKENS):
        return any(contains(source, form) for form in spellings(path)) or any(contains(form, path) for form in spellings(source))
    outer, inner = components(source), components(path)
    return len(outer) <= len(inner) and all(a in TEMPLATE_TOKENS or a == b for a, b in zip(outer, inner, strict=False))


def writable_mounts(plan: Plan) -> Iterator[tuple[EffectiveSandbox, EffectiveMount]]:
    """(server, mount) for each read-write mount of a host directory (a workspace dir
    included) by a launched server; a tmpfs is fresh memory, not a host directory."""
    for server in launched(plan):
        for mount in server.mounts:
            if mount.writable and not mount.tmpfs:
                yield server, mount


Writer = tuple[EffectiveSandbox, EffectiveMount]
# Sources whose containment does not follow from their components alone (see contains and spellings).
_UNINDEXED = ("/", "/home", "/root", "/Users", "/run", "/var/run")


class WritableIndex:
    """The writable host mounts of a plan, indexed by path so a containment query looks at
    the few sources along one path instead of every mount (linear in servers, not quadratic).

    Many mounts share a source (a workspace dir every server mounts), so the index files
    each distinct source once and answers a query source by source.
    """

    def __init__(self, plan: Plan) -> None:
        self.order: dict[int, int] = {}  # answers keep the plan's order
        self.at: dict[str, list[Writer]] = {}  # source -> its mounts, in plan order
        for writer in writable_mounts(plan):
            self.order[id(writer[1])] = len(self.order)
            self.at.setdefault(writer[1].location, []).append(writer)
        self.above: dict[tuple[str, ...], list[str]] = {}  # fixed part of a source (before {agent}) -> sources
        self.scan: list[str] = []  # sources with other spellings: checked one by one
        for source in self.at:
            if _unindexed(source):
                self.scan.append(source)
            else:
                fixed = tuple(itertools.takewhile(lambda part: part not in TEMPLATE_TOKENS, components(source)))
                self.above.setdefault(fixed, []).append(source)
        self._below: dict[tuple[str, ...], list[str]] | None = None  # every prefix of a source -> sources under it
        self.held: dict[str, list[Writer]] = {}  # path -> holding(path)

    def holding(self, path: str) -> list[Writer]:
        """The mounts whose source holds ``path`` (:func:`source_contains`); servers mostly share
        the path asked about (an audit sink set in ``defaults``), so each answer is kept."""
        found = self.held.get(path)
        if found is None:
            found = self.held[path] = self._holding(path)
        return list(found)

    def _holding(self, path: str) -> list[Writer]:
        candidates = dict.fromkeys(self.scan)
        for form in spellings(path):
            parts = components(form)
            for end in range(len(parts) + 1):
                candidates.update(dict.fromkeys(self.above.get(tuple(parts[:end]), ())))
        return self._mounts(source for source in candidates if source_contains(source, path))

    def under(self, path: str) -> list[Writer]:
        """The mounts whose source ``path`` contains (:func:`contains`)."""
        if path in _UNINDEXED or path.startswith("~"):
            sources: Iterable[str] = self.at
        else:
            sources = self.below().get(tuple(components(path)), ())
        return self._mounts(source for source in sources if contains(path, source))

    def below(self) -> dict[tuple[str, ...], list[str]]:
        """Every prefix of a source -> the sources under it; made on the first :meth:`under` query."""
        if self._below is None:
            self._below = {}
            for source in self.at:
                parts = components(source)
                for end in range(1, len(parts) + 1):
                    self._below.setdefault(tuple(parts[:end]), []).append(source)
        return self._below

    def _mounts(self, sources: Iterable[str]) -> list[Writer]:
        """The mounts of ``sources``, in the plan's order."""
        found = [writer for source in sources for writer in self.at[source]]
        return sorted(found, key=lambda w: self.order[id(w[1])])


def _unindexed(source: str) -> bool:
    """Whether a source's containment does not follow from its components alone (see :func:`spellings`)."""
    return source.startswith("~") or len(spellings(source)) > 1 or any(source == p or source.startswith(p + "/") for p in _UNINDEXED[1:]) or source == "/"


def writable_index(plan: Plan) -> WritableIndex:
    """The plan's WritableIndex, made once per plan (rules and targets ask it per server)."""
    index = plan.derived.get("writable_index")
    if not isinstance(index, WritableIndex):
        index = plan.derived["writable_index"] = WritableIndex(plan)
    return index


def shown(mount: EffectiveMount) -> str:
    """A mount's source as the spec names it: ``workspace.output`` or the host path."""
    return f"workspace.{mount.workspace_dir}" if mount.workspace_dir else mount.location


def host_mounts(server: EffectiveSandbox) -> Iterator[EffectiveMount]:
    """The server's mounts of host paths (not workspace dirs)."""
    return (mount for mount in server.mounts if mount.workspace_dir is None)


# --- network ---

# The address knowledge (metadata endpoints, special-purpose ranges) lives in
# mcpspec.addresses, shared with the targets' egress proxy.
__all__ = ["METADATA_HOSTS", "METADATA_NETWORKS", "PRIVATE_NETWORKS", "IPNetwork", "networks_overlap", "subnet_of"]


def egress_open(server: EffectiveSandbox) -> bool:
    """Whether the server may reach destinations nobody listed."""
    return server.egress.default == "allow"


def denied(server: EffectiveSandbox, network: IPNetwork) -> bool:
    """Whether an explicit deny entry covers all of ``network``."""
    return any(entry.kind == "cidr" and subnet_of(network, entry.network) for entry in server.egress.deny)


def allow_entries(server: EffectiveSandbox) -> Iterator[tuple[SpecPath, Destination]]:
    """(spec path, entry) for each allow entry; the path is in ``defaults`` when the list came from there."""
    return _entries(server, "allow")


def deny_entries(server: EffectiveSandbox) -> Iterator[tuple[SpecPath, Destination]]:
    """(spec path, entry) for each deny entry; the path is in ``defaults`` when the list came from there."""
    return _entries(server, "deny")


def _entries(server: EffectiveSandbox, which: Literal["allow", "deny"]) -> Iterator[tuple[SpecPath, Destination]]:
    """Every entry, a preset's expanded ones each at the path of the preset (``@private``)."""
    base = server.origin(f"egress.{which}")
    entries = server.egress.allow if which == "allow" else server.egress.deny
    for position, entry in enumerate(entries):
        yield (*base, server.egress.index_of(which, position)), entry


def entry_path(server: EffectiveSandbox, which: Literal["allow", "deny"], position: int) -> SpecPath:
    """Where the entry at ``position`` of ``allow`` or ``deny`` is written: the path ``allow_entries`` and ``deny_entries`` give it."""
    return (*server.origin(f"egress.{which}"), server.egress.index_of(which, position))


def written_entries(server: EffectiveSandbox, which: Literal["allow", "deny"]) -> Iterator[tuple[SpecPath, str, tuple[Destination, ...]]]:
    """(spec path, the text the spec wrote, the entries it stands for): a preset once, with all its entries."""
    base = server.origin(f"egress.{which}")
    for index, entries in server.egress.written(which):
        first = entries[0]
        text = f"@{first.preset}" if first.preset is not None else first.text
        yield (*base, index), text, entries


def reaches(server: EffectiveSandbox, network: IPNetwork) -> bool:
    """Whether the egress policy lets the server reach some address of ``network``."""
    if not server.runs_here:
        return False
    if egress_open(server):
        return not denied(server, network)
    return any(entry.kind == "cidr" and networks_overlap(entry.network, network) for _, entry in allow_entries(server))


# --- secrets ---

SECRET_ENV_NAME = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|DSN|DATABASE_URL)", re.IGNORECASE)
CLOUD_ENV_NAME = re.compile(
    r"^(AWS_[A-Z0-9_]*|AZURE_[A-Z0-9_]*|GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_CLOUD_[A-Z0-9_]*|CLOUDSDK_[A-Z0-9_]*"
    r"|IDENTITY_ENDPOINT|IDENTITY_HEADER|KUBECONFIG|ARM_[A-Z0-9_]*|OCI_[A-Z0-9_]*|DIGITALOCEAN_[A-Z0-9_]*)$"
)


def looks_like_secret(value: str) -> bool:
    return holds_secret(value)


# --- tools and effects ---


def tools(plan: Plan) -> tuple[tuple[EffectiveSandbox, str, Tool], ...]:
    """(server, name, tool) for every tool of every server, external ones included; listed once per plan."""
    found = plan.derived.get("tools")
    if not isinstance(found, tuple):
        found = plan.derived["tools"] = tuple([(server, name, tool) for server in plan.servers.values() for name, tool in server.tools.items()])
    return found


def tool_path(server: EffectiveSandbox, name: str) -> SpecPath:
    """Where the server's tool ``name`` is declared."""
    return (*server.path, "tools", name)


def tools_with(server: EffectiveSandbox, effect: str) -> list[str]:
    """The names of the server's tools that declare ``effect``."""
    return [name for name, tool in server.tools.items() if effect in tool.effects]


def effects(server: EffectiveSandbox) -> set[str]:
    return {effect for tool in server.tools.values() for effect in tool.effects}


def declares(server: EffectiveSandbox, effect: str) -> bool:
    """Whether a tool of the server declares ``effect`` (``effect in effects(server)``, without building the set)."""
    return any(effect in tool.effects for tool in server.tools.values())


ApprovalMode = Literal["always", "per-session"]


def approval_mode(plan: Plan, tool: Tool) -> ApprovalMode | None:
    """How often a person approves a call of ``tool`` before it runs (None: never).

    A tool's own setting wins; unset, the top-level ``approvals.require``
    decides by the tool's effects, and then every call is asked. Lint and
    `mcpspec run` both ask this one question.
    """
    if tool.approval is not None:
        return None if tool.approval == "never" else tool.approval
    return "always" if any(effect in plan.approvals.require for effect in tool.effects) else None


def approval_gated(plan: Plan, tool: Tool) -> bool:
    """Whether a person approves a call of ``tool`` before it runs."""
    return approval_mode(plan, tool) is not None


def reads_untrusted(server: EffectiveSandbox) -> bool:
    """Content an attacker may write reaches the model through this server."""
    return declares(server, "reads_untrusted") or server.kind in ("browser", "search")


def reads_private(server: EffectiveSandbox) -> bool:
    return declares(server, "reads_private") or server.kind == "data"


def executes_code(server: EffectiveSandbox) -> bool:
    return declares(server, "exec") or server.kind == "code-exec"


def holds_secrets(server: EffectiveSandbox) -> bool:
    return bool(server.secrets)


def launched(plan: Plan) -> Iterator[EffectiveSandbox]:
    """The servers mcpspec runs (not the external ones)."""
    return (server for server in plan.servers.values() if server.runs_here)
