"""Turn imported servers into spec entries (ruamel.yaml mappings with REVIEW comments),
the secrets they reference, and the import's findings.

No value the client config holds as a literal secret is copied: it becomes a secret read
from an environment variable (provider env) and an IM001 finding to rotate it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from mcpspec import dockerargs
from mcpspec.importer import known as catalog
from mcpspec.importer.destinations import destinations
from mcpspec.importer.findings import CONTROL, ImportFinding, escaped, finding
from mcpspec.importer.model import ImportedConfig, ImportedServer, Pointer
from mcpspec.importer.reading import position
from mcpspec.importer.references import env_name, literal_secret, references, secret_argument, secret_name, secret_shaped, shorten, spec_name

RUNNERS = {"npx": "npm", "bunx": "npm", "pnpx": "npm", "uvx": "pypi", "pipx": "pypi", "docker": "oci", "podman": "oci"}
INTERPRETERS = {"node", "python", "python3", "deno", "bun", "uv", "npm", "pnpm", "go", "java", "ruby", "php"}
_WORKSPACE = {"${workspaceFolder}": "/workspace/input", "${workspaceRoot}": "/workspace/input"}
_WORKSPACE_VARIABLE = re.compile(r"\$\{(?:workspaceFolder|workspaceRoot)(?::[^}]*)?\}")
# What a client fills in that means nothing inside the sandbox: editor variables (${userHome}, ${file}, ${config:x}...)
# and the launching user's own environment (${HOME}, $USER).
_CLIENT_VARIABLE = re.compile(
    r"\$\{(?:userHome|workspaceFolderBasename|pathSeparator|/|cwd|file|fileBasename|fileBasenameNoExtension|fileDirname|fileDirnameBasename|fileExtname|"
    r"fileWorkspaceFolder|relativeFile|relativeFileDirname|lineNumber|selectedText|execPath|defaultBuildTask|HOME|PWD|USER|"
    r"(?:config|command|env):[^}]*)\}|\$(?:HOME|PWD|USER)\b"
)


@dataclass
class Conversion:
    """The spec pieces of one import."""

    servers: dict[str, CommentedMap] = field(default_factory=dict)
    secrets: dict[str, CommentedMap] = field(default_factory=dict)
    agent_servers: list[str] = field(default_factory=list)
    findings: list[ImportFinding] = field(default_factory=list)


class _Server:
    """Builds one server's entry."""

    def __init__(self, config: ImportedConfig, source: ImportedServer, name: str, out: Conversion, taken_secrets: set[str]) -> None:
        self.config, self.source, self.name, self.out, self.taken = config, source, name, out, taken_secrets
        self.entry = CommentedMap()
        self.bindings = CommentedSeq()
        self.env_set = CommentedMap()
        self.inherit: list[str] = []
        self.hit: catalog.Known | None = None

    def note(self, code: str, pointer: Pointer, message: str) -> None:
        self.out.findings.append(finding(self.config, code, pointer, message))

    def secret(self, env_var: str, ref: str, description: str, review: str) -> str:
        """A secret read from env var ``ref``, bound to this server as ``env_var``; its name."""
        name = spec_name(ref, "secret")
        if (name in self.out.secrets and self.out.secrets[name]["ref"] != ref) or name in self.taken:
            name = spec_name(f"{self.name}-{ref}", "secret")
        base, count = name, 2
        while (name in self.out.secrets and self.out.secrets[name]["ref"] != ref) or name in self.taken:
            name = f"{shorten(base, 37)}-{count}"  # another credential's name: never share one
            count += 1
        if name not in self.out.secrets:
            entry = CommentedMap([("provider", "env"), ("ref", ref), ("description", description)])
            _eol(entry, f"REVIEW: {review}", "ref")
            if self.hit is not None and self.hit.secret_env == env_var:
                if self.hit.scopes:
                    entry["scopes"] = CommentedSeq(self.hit.scopes)
                    entry["scopes"].fa.set_flow_style()
                    _eol(entry, "REVIEW: the least-privilege scopes the catalog suggests; issue a new credential with them", "scopes")
                if self.hit.ttl:
                    entry["ttl"] = self.hit.ttl
            self.out.secrets[name] = entry
        binding = CommentedMap([("use", name), ("as", CommentedMap([("env", env_var)]))])
        binding.fa.set_flow_style()
        binding["as"].fa.set_flow_style()
        if all(existing["use"] != name or existing["as"]["env"] != env_var for existing in self.bindings):
            self.bindings.append(binding)
        return name

    def reference_secret(self, env_var: str, value: str, where: str) -> bool:
        """Bind the references in ``value`` as secrets; whether there were any."""
        found = references(value)
        for reference in found:
            if reference.kind == "input":
                prompt = self.config.inputs.get(reference.name)
                ref = env_name(reference.name)
                described = prompt.description if prompt and prompt.description else f"input {reference.name}"
                self.secret(env_var, ref, f"{described} (the client prompted for it: input {reference.name}).", f"export the value as {ref} where the sandbox starts")
            else:
                self.secret(env_var if len(found) == 1 else reference.name, reference.name, f"{where} of the {self.config.client} server {self.source.name!r}.", f"{reference.name} is read from the launching environment")
        return bool(found)

    def literal(self, env_var: str, pointer: Pointer, where: str) -> None:
        ref = env_var if re.fullmatch(r"[A-Z_][A-Z0-9_]*", env_var) else env_name(f"{self.name}_{env_var}")
        if any(entry["ref"] == ref for entry in self.out.secrets.values()):
            ref = env_name(f"{self.name}_{ref}")  # another server's credential: never share one
        secret = self.secret(env_var, ref, f"{where} of the {self.config.client} server {self.source.name!r}.", f"put the NEW value in {ref}: the old one sat in plain text in the client config")
        line, _ = position(self.config.text, pointer)
        # The config's file name and line; a character the schema or YAML refuses becomes '?'.
        self.out.secrets[secret]["exposed"] = f"{CONTROL.sub('?', Path(self.config.path).name)[:180]}:{line}"
        _eol(self.out.secrets[secret], "REVIEW: rotate it, then delete this key (SE010 reports it until then)", "exposed")
        self.note("IM001", pointer, f"{where} of server {self.source.name!r} is a literal secret: not copied; the spec reads it from env {ref} (secret {secret!r}, marked exposed: SE010 reports it until you rotate it and delete the mark); rotate it, it sat in plain text in this file")

    def build(self) -> CommentedMap:
        source, entry = self.source, self.entry
        hit = self.hit = catalog.lookup(source.command, source.url)
        entry["description"] = description(self.config.client, source.name)
        entry["kind"] = hit.kind if hit else "other"
        if hit is not None and hit.archived:
            what = f"the catalog's {hit.name} server ({hit.package})" if hit.package else f"the catalog's {hit.name} server"
            instead = f"its maintained successor is {hit.successor}: move to it" if hit.successor else "the catalog names no maintained successor: replace it"
            self.note("IM013", source.pointer, f"server {source.name!r} is {what}, whose project is archived (no fixes, security ones included): {instead}")
            _eol(entry, f"REVIEW: archived upstream (IM013); {instead}", "description")
        entry["trust"] = "third-party"
        _eol(entry, "REVIEW: who wrote it; vetted or first-party loosens some rules", "trust")
        if source.url and not source.command:
            self.remote(source.url)
        else:
            self.local(hit)
        self.environment()
        self.tools(hit)
        return entry

    def remote(self, url: str) -> None:
        source, entry = self.source, self.entry
        entry["placement"] = "external"
        _eol(entry, "REVIEW: a remote server: mcpspec does not sandbox it, only records it", "placement")
        transport = CommentedMap([("type", source.transport if source.transport in ("http", "sse") else "http")])
        cleaned = self.clean_url(url)
        if re.fullmatch(r"https?://\S+", cleaned):
            transport["url"] = cleaned
        else:
            transport["url"] = "https://todo.invalid/"
            _eol(transport, "TODO: the client's URL is not http(s)://...: set the server's URL", "url")
        bearer = source.bearer_env is not None or any(key.lower() == "authorization" for key in source.headers)
        if bearer:
            transport["auth"] = CommentedMap([("type", "bearer")])
            transport["auth"].fa.set_flow_style()
        entry["transport"] = transport
        self.note("IM003", (*source.pointer,), f"server {source.name!r} is remote ({urlsplit(url).hostname or 'no host'}): imported as placement: external; nothing sandboxes it")
        if source.bearer_env:
            self.secret("AUTHORIZATION_BEARER", source.bearer_env, f"Bearer token of the remote server {source.name!r}.", f"the token is read from {source.bearer_env}")
        for header, variable in source.header_env.items():
            self.secret(env_name(header), variable, f"Header {header} of the remote server {source.name!r}.", f"the header value is read from {variable}")
        for header, value in source.headers.items():
            pointer = (*source.pointer, "headers" if "headers" in self.config.text else "http_headers", header)
            if not self.reference_secret(env_name(header), value, f"header {header}") and (literal_secret(header, value) or secret_name(header) or header.lower() == "authorization"):
                self.literal(env_name(header), pointer, f"header {header}")

    def clean_url(self, url: str) -> str:
        """``url`` without credentials: user info and query strings that hold secrets are
        dropped (IM001), interpolations are left as they are."""
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        query = parts.query
        path = parts.path
        if secret_shaped(path) or any(secret_shaped(piece) for piece in path.split("/")):
            path = "/"
            self.note("IM001", (*self.source.pointer, "url"), f"the URL path of server {self.source.name!r} carries a credential: dropped; rotate it and set the path by hand")
        if query and (secret_shaped(url) or re.search(r"(key|token|secret|password|auth)", query, re.IGNORECASE)):
            query = ""
            self.note("IM001", (*self.source.pointer, "url"), f"the URL of server {self.source.name!r} carries a credential in its query: dropped; rotate it and send it in a header")
        elif netloc != parts.netloc:
            self.note("IM001", (*self.source.pointer, "url"), f"the URL of server {self.source.name!r} carries a credential: dropped; rotate it")
        return urlunsplit((parts.scheme, netloc, path, query, ""))

    def local(self, hit: catalog.Known | None) -> None:
        source, entry = self.source, self.entry
        program = Path(source.command[0]).name if source.command else ""
        entry["placement"] = "dedicated"
        entry["transport"] = CommentedMap([("type", "stdio")])
        entry["transport"].fa.set_flow_style()
        command, notes = self.arguments()
        run = dockerargs.parse(source.command)
        # A container engine's command is kept as the client wrote it, every flag of it: the catalog's program
        # would drop the user's flags (and add its own), so only npm and PyPI runners are replaced.
        installed = hit is not None and run is None and program in RUNNERS and bool(hit.command) and hit.registry == RUNNERS[program]
        if run is not None:
            self.container(run, hit, notes)
        package = _package(program, source.command)
        if package is not None:
            if installed and hit is not None and "version" not in package and hit.version:
                package["name"], package["version"] = hit.package, hit.version
                entry["package"] = package
                _eol(entry, "REVIEW: pinned by the catalog (the client ran the newest release); upgrade deliberately", "package")
            else:
                entry["package"] = package
                if "version" not in package:
                    _eol(entry, "REVIEW: pin a version", "package")
        if installed and hit is not None:
            # The runner would download the package at every start, which a sandbox with egress denied and
            # package installs off cannot do: start the pinned release's installed program instead.
            command, notes = _installed_command(hit, program, source.command, command, notes)
        entry["command"] = command
        if not hit and program not in RUNNERS and program not in INTERPRETERS:
            notes.insert(0, "TODO: an unknown program: put it in an image (image:) or install it in the sandbox, then review its tools")
            what = f"runs an unknown program {program!r}" if program else "has no command"
            self.note("IM004", (*source.pointer, "command"), f"server {source.name!r} {what}: imported with a TODO; mcpspec cannot tell what it needs")
        elif program in ("npx", "uvx", "bunx", "pnpx", "pipx") and not installed:
            notes.insert(0, f"REVIEW: {program} downloads the package at start; with egress denied, build an image with it")
        if notes:
            _eol(entry, "; ".join(notes), "command")
        if source.cwd is not None:
            entry["workdir"] = "/workspace/input"
            _eol(entry, f"REVIEW: the client started it in {'a host directory' if source.cwd.startswith(('/', '~')) else source.cwd!r}", "workdir")
        self.mounts(hit if installed else None, command)
        self.egress(hit)

    def container(self, run: dockerargs.DockerRun, hit: catalog.Known | None, notes: list[str]) -> None:
        """The image of a ``docker run``, and a finding for every flag of it that hands the container a piece of the host."""
        source, entry = self.source, self.entry
        image = run.image(source.command)
        # A reference with a blank or a control character is no image (and would make the spec invalid): left for a person.
        if image and not re.search(r"[\s\x00-\x1f\x7f]", image):
            if hit is not None and hit.registry == "oci" and hit.package and not _image_pinned(image):
                entry["image"] = f"{hit.package}:{hit.version}"
                _eol(entry, "REVIEW: the catalog's tag; pin it by digest (@sha256:...)", "image")
            else:
                entry["image"] = image
                _eol(entry, "REVIEW: pin it by digest (@sha256:...)", "image")
        flagged = dockerargs.dangerous(source.command)
        for option, why in flagged:
            flag = dockerargs.flag_text(source.command, option)
            self.note("IM011", (*source.pointer, "args"), f"server {source.name!r} runs its container with {flag}: {why}; kept in command as the client wrote it (SP010 reports it at lint): drop it")
        usual = f" (the catalog's: {' '.join(hit.command)})" if hit is not None and hit.registry == "oci" and hit.command else ""
        notes.append(f"REVIEW: kept as the client wrote it; a sandbox runs no container engine: set command to the image's own program{usual}")
        if flagged:
            notes.insert(0, "TODO: drop " + ", ".join(dockerargs.flag_text(source.command, option) for option, _ in flagged) + " (SP010)")

    def mounts(self, installed: catalog.Known | None, command: CommentedSeq) -> None:
        entry = self.entry
        mounts = CommentedSeq()
        if installed is not None:
            # The catalog knows what the installed program reads and writes; only the dirs the command names are
            # mounted, and the private scratch dir (a tmpfs, nothing of the host's).
            words = {str(word) for word in command}
            for origin, inside, mode, why in installed.mounts:
                if inside in words or origin == "workspace.tmp":
                    mount = CommentedMap([("from", origin), ("to", inside)])
                    mount.fa.set_flow_style()
                    mounts.append(mount)
                    _eol(mounts, f"{mode}: {why}", len(mounts) - 1)
            if mounts:
                entry["mounts"] = mounts
            return
        for target in ("input", "tmp"):
            mount = CommentedMap([("from", f"workspace.{target}"), ("to", f"/workspace/{target}")])
            mount.fa.set_flow_style()
            mounts.append(mount)
        entry["mounts"] = mounts
        _eol(entry, "REVIEW: input is read-only; add workspace.output if the server writes", "mounts")

    def egress(self, hit: catalog.Known | None) -> None:
        """Egress to the destinations the client config names for the server (its arguments and env), and no other."""
        source, entry = self.source, self.entry
        found = destinations([*source.command[1:], *source.env.values()])
        egress = CommentedMap([("default", "deny"), ("allow", CommentedSeq(found.allow)), ("via", "proxy")])
        egress["allow"].fa.set_flow_style()
        entry["egress"] = egress
        suggested = [host for host in (hit.egress if hit else ()) if not _placeholder(host) and host not in found.allow]
        if found.allow:
            text = "REVIEW: the destinations the client config names (arguments, env); all else is denied"
        else:
            text = "REVIEW: nothing in the client config names a destination, so none is allowed"
        if suggested:
            text += f"; the catalog says the server needs {', '.join(suggested)}: add it if the server must reach it"
        if found.unusable:
            text += (f"; the client config also names {', '.join(found.unusable)}, not allowed: this machine, a link-local or metadata address, "
                     "or what no egress entry holds (it needs a name with a dot, and a port); add it by hand if the server must reach it")
        _eol(entry, text, "egress")

    def arguments(self) -> tuple[CommentedSeq, list[str]]:
        """The command with literal secrets replaced by a pointer to their secret, and the
        workspace folder mapped to the mounted input."""
        source = self.source
        out = CommentedSeq()
        notes: list[str] = []
        previous: str | None = None
        run = dockerargs.parse(source.command)
        engine_options = run.image_index if run is not None and run.image_index is not None else 0  # the engine's, not the server's (IM011 reads them)
        for index, argument in enumerate(source.command):
            if index and secret_argument(previous, argument):
                variable = env_name(f"{self.name}_arg_{index}")
                self.literal(variable, (*source.pointer, "args"), f"argument {index}")
                out.append(f"${{{variable}}}")
                notes.append(f"TODO: argument {index} held a secret; the server gets it in env {variable}: make it read that, then drop the argument")
            else:
                for name, path in _WORKSPACE.items():
                    argument = argument.replace(name, path)
                out.append(argument)
                if index > engine_options and (argument.startswith(("/Users/", "/home/", "~", "C:\\")) or "${userHome}" in argument):
                    notes.append(f"REVIEW: argument {index} is a host path: the sandbox sees /workspace/input instead")
            previous = argument
        out.fa.set_flow_style()
        return out, notes

    def environment(self) -> None:
        source = self.source
        dropped: list[str] = []
        for raw, value in source.env.items():
            pointer = (*source.pointer, "env", raw)
            key = raw if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", raw) else env_name(raw)
            if self.reference_secret(key, value, f"env {key}"):
                continue
            if literal_secret(key, value):
                self.literal(key, pointer, f"env {key}")
                continue
            value = _WORKSPACE_VARIABLE.sub("/workspace/input", value)
            unresolved = sorted({found.group(0) for found in _CLIENT_VARIABLE.finditer(value)})
            if unresolved:
                dropped.append(key)
                self.note("IM012", pointer, f"env {key} of server {source.name!r} uses {', '.join(unresolved)}, which the client fills in and the sandbox has no meaning for: not set; set it by hand")
            else:
                self.env_set[key] = value
        for variable in source.env_passthrough:
            if secret_name(variable):
                self.secret(variable, variable, f"env {variable} forwarded to the {self.config.client} server {source.name!r}.", f"{variable} is read from the launching environment")
            else:
                self.inherit.append(variable)
        if source.env_file is not None:
            self.env_file(source.env_file)
        if self.source.url and not self.source.command:
            self._external_secrets_comment()
            return
        env = CommentedMap([("inherit", self.inherit or "none")])
        if self.env_set:
            env["set"] = self.env_set
        self.entry["env"] = env
        if dropped:
            _eol(self.entry, f"TODO: the client also set {', '.join(dropped)} from its own variables (IM012): set them by hand", "env")
        if self.bindings:
            self.entry["secrets"] = self.bindings

    def _external_secrets_comment(self) -> None:
        """A remote server is not started by us: its credentials are recorded under the top-level
        secrets (the client sends them), not bound to a sandbox."""
        if self.bindings:
            names = ", ".join(sorted({binding["use"] for binding in self.bindings}))
            _eol(self.entry, f"REVIEW: the client sends credential(s) {names} (see secrets)", "transport")

    def env_file(self, value: str) -> None:
        base = Path(self.config.path).parent
        text = value
        for name in _WORKSPACE:
            text = text.replace(name, str(base.parent if base.name == ".vscode" else base))
        path = (base / text).resolve() if not Path(text).is_absolute() else Path(text)
        try:
            names = [line.split("=", 1)[0].removeprefix("export ").strip() for line in path.read_text(encoding="utf-8").splitlines() if "=" in line and not line.lstrip().startswith("#")]
        except (OSError, UnicodeDecodeError):
            self.note("IM006", (*self.source.pointer, "envFile"), f"the env file of server {self.source.name!r} was not read: list its variables as secrets by hand")
            _eol(self.entry, "TODO: the client also loaded an env file; add its variables as secrets", "description")
            return
        for variable in names:
            if variable:
                self.secret(variable, variable, f"env {variable} from the env file of the {self.config.client} server {self.source.name!r}.", f"{variable} is read from the launching environment")

    def tools(self, hit: catalog.Known | None) -> None:
        """The tools the client lets the model see, and only those: its allow list (``enabled_tools``,
        ``includeTools``) when it has one, else the catalog's tools; its deny list always wins."""
        source, entry = self.source, self.entry
        known = dict(hit.tools) if hit else {}
        hidden = set(source.tools_deny)
        if source.tools_allow is not None:
            offered = [tool for tool in source.tools_allow if tool not in hidden]
        else:
            offered = [tool for tool in known if tool not in hidden]
        approved = set(source.auto_approve)
        offered += [tool for tool in source.auto_approve if tool != "*" and tool not in offered and tool not in hidden and source.tools_allow is None]
        tools = CommentedMap()
        for tool in offered:
            if tool in tools:
                continue
            if tool in known:
                tools[tool] = CommentedMap([("effects", CommentedSeq(known[tool]))])
            else:
                tools[tool] = CommentedMap([("effects", CommentedSeq()), ("approval", "always")])
                _eol(tools[tool], "REVIEW: effects unknown, so every call needs approval", "approval")
            tools[tool]["effects"].fa.set_flow_style()
            if tool in approved or "*" in approved:
                tools[tool]["approval"] = "always"  # the client let it run unasked: ask until reviewed
        if tools:
            entry["tools"] = tools
        else:
            _eol(entry, "REVIEW: no tools listed: mcpspec run refuses unlisted tools; list them with their effects (mcpspec lock pins them)", "kind")
        entry["unlisted_tools"] = "deny"
        if source.tools_allow is not None:
            self.note("IM007", (*source.pointer,), f"the client shows only tools {', '.join(offered) or 'none'} of server {source.name!r}: only they are listed, so mcpspec run refuses every other")
        if hidden:
            self.note("IM007", (*source.pointer,), f"the client hid tools {', '.join(source.tools_deny)} of server {source.name!r}: they are not listed, so mcpspec run refuses them")
        if approved or source.trust_all:
            bypassed = "every tool" if (source.trust_all and not source.tools_allow) or "*" in approved else "tools " + ", ".join(sorted(approved or set(source.tools_allow or [])))
            key = source.auto_approve_key or "autoApprove"
            self.note("IM002", (*source.pointer, key), f"{key} let {bypassed} of server {source.name!r} run without asking: the spec asks approval for them (approval: always) until you review their effects")


def convert(config: ImportedConfig, taken_servers: Collection[str] = (), taken_secrets: Collection[str] = ()) -> Conversion:
    """Spec entries for every server of ``config``; names in ``taken_*`` are avoided."""
    out = Conversion()
    used = set(taken_servers)
    for source in config.servers:
        name = spec_name(source.name)
        base, count = name, 2
        while name in used:
            name = f"{shorten(base, 36)}-{count}"
            count += 1
        used.add(name)
        if name != source.name:
            out.findings.append(finding(config, "IM009", source.pointer, f"server {source.name!r} is named {name!r} in the spec (names are 1-40 of a-z, 0-9 and -)"))
        out.servers[name] = _Server(config, source, name, out, set(taken_secrets)).build()
        if source.enabled:
            out.agent_servers.append(name)
        else:
            out.servers[name].yaml_set_start_comment("disabled in the client: imported, but no agent uses it")
            out.findings.append(finding(config, "IM005", source.pointer, f"server {source.name!r} is disabled in the client: imported, but left out of the agent"))
    for pointer, key in config.notes:
        out.findings.append(finding(config, "IM008", pointer, f"{key} starts or enables servers without asking: review which servers the client may start"))
    return out


def description(client: str, name: str) -> str:
    """The description of an imported server: how a later ``--into`` recognises it."""
    return f"Imported from the {client} server {name!r}."


def _installed_command(hit: catalog.Known, program: str, original: list[str], command: CommentedSeq, notes: list[str]) -> tuple[CommentedSeq, list[str]]:
    """The catalog's installed program in place of ``program`` (a runner), with the client's own
    arguments after the package, every one of them: a host path becomes the workspace input the
    sandbox mounts in its place; the catalog adds no argument of its own (its usual command is in the comment)."""
    ran = " ".join(str(word) for word in command)  # secrets already replaced by their ${VAR}
    start = _launch_index(program, original)
    extra = [("/workspace/input" if _host_path(str(argument)) else argument) for argument in (command[start + 1 :] if start is not None else [])]
    installed = CommentedSeq([hit.command[0], *extra])
    kept = [note for note in notes if not note.startswith("REVIEW: argument")]
    if any(_host_path(str(argument)) for argument in command[(start or 0) + 1 :]):
        kept.append("the client's host paths are /workspace/input here")
    head = f"REVIEW: the {hit.name} server's installed program with the client's arguments, no download at start (the client ran: {ran}); the catalog's usual command: {' '.join(hit.command)}"
    installed.fa.set_flow_style()
    return installed, [head, *kept]


def _placeholder(destination: str) -> bool:
    """Whether an egress entry names a host reserved for examples (RFC 2606, RFC 6761): a catalog's placeholder."""
    host = destination.rsplit(":", 1)[0].lower()
    return bool(re.search(r"(^|\.)(example|test|invalid|localhost)$|(^|\.)example\.(com|net|org)$", host))


def _host_path(argument: str) -> bool:
    return argument.startswith(("/", "~", "${userHome}")) or bool(re.match(r"^[A-Za-z]:\\", argument))


def _launch_index(program: str, command: list[str]) -> int | None:
    """Where the package or image a runner starts sits in ``command``."""
    run = dockerargs.parse(command)
    if run is not None:
        return run.image_index
    for index, argument in enumerate(command[1:], start=1):
        if not (argument.startswith("-") or argument in ("run", "exec", "--from")):
            return index
    return None


def _image_pinned(image: str) -> bool:
    """Whether the image names a digest or a tag other than latest."""
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] != "latest"


def _package(program: str, command: list[str]) -> CommentedMap | None:
    registry = RUNNERS.get(program)
    if registry not in ("npm", "pypi"):
        return None
    index = _launch_index(program, command)
    if index is not None:
        argument = command[index]
        if registry == "npm":
            scoped = argument.startswith("@")
            name, _, version = argument[1:].partition("@") if scoped else argument.partition("@")
            name = "@" + name if scoped else name
        else:
            name, _, version = argument.partition("==")
            if not version:
                name, _, version = argument.partition("@")
        package = CommentedMap([("registry", registry), ("name", name)])
        if version and version != "latest" and not re.search(r"[\s\x00-\x1f\x7f]", version):
            package["version"] = version
        package.fa.set_flow_style()
        return package
    return None


def _eol(node: CommentedMap | CommentedSeq, text: str, key: object) -> None:
    """A comment at the end of ``key``'s line, on that one line: a line break or other control
    character from the client's config (an argument, a name) is written escaped, so it can start
    no line of its own (no key, no comment of its own), nor make the file unreadable as YAML."""
    node.yaml_add_eol_comment(escaped(text), key)
