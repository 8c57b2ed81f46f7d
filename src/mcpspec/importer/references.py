"""What a client config value is: a literal, a literal secret, or a reference to one.

Recognised references: ``${env:X}`` (VS Code, Cursor, Windsurf), ``${input:x}`` (VS Code),
``${X}`` and ``${X:-default}`` (Claude Code, Gemini), bare ``$X`` (Gemini),
``${{ secrets.X }}`` (Continue). Editor variables such as ``${workspaceFolder}`` are paths,
not secrets. A literal is a secret when it has a known token shape (mcpspec.redact) or sits
under a credential-like name (``*_TOKEN``, ``Authorization``, ``password``...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcpspec.redact import holds_secret

EDITOR_VARIABLES = frozenset(
    {"workspaceFolder", "workspaceFolderBasename", "userHome", "pathSeparator", "/", "cwd", "file", "fileDirname", "workspaceRoot", "HOME", "PWD", "USER"}
)
_REFERENCE = re.compile(
    r"\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}"  # continue
    r"|\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}"
    r"|\$\{input:([A-Za-z0-9_.-]+)\}"
    r"|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}"
    r"|\$([A-Za-z_][A-Za-z0-9_]*)"
)
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PASS$|PWD$|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE|SESSION|^KEY$|_KEY$|DSN|CONNECTION_STRING|DATABASE_URL)", re.IGNORECASE)
_SECRET_ARG = re.compile(r"^--?(token|api[-_]?key|password|secret|auth|access[-_]?token|bearer)(=|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Reference:
    """One interpolation: ``kind`` env or input, and the variable or input id."""

    kind: str
    name: str


def references(text: str) -> list[Reference]:
    """The env and input references in ``text`` (editor variables left out)."""
    found: list[Reference] = []
    for match in _REFERENCE.finditer(text):
        secret, env, prompt, braced, bare = match.groups()
        if prompt is not None:
            found.append(Reference("input", prompt))
            continue
        name = secret or env or braced or bare
        if name is not None and name not in EDITOR_VARIABLES:
            found.append(Reference("env", name))
    return found


def secret_name(name: str) -> bool:
    """Whether a variable or header name says its value is a credential."""
    return bool(_SECRET_NAME.search(name)) and name.upper() not in {"AUTH_TYPE", "AUTH_MODE", "SESSION_ID_HEADER"}


def secret_shaped(text: str) -> bool:
    """Whether ``text`` holds a value shaped like a token, a key or a URL with a password."""
    return holds_secret(text) or text.lower().startswith(("bearer ", "basic ", "token "))


def literal_secret(name: str, value: str) -> bool:
    """Whether ``value`` under ``name`` is a literal secret: not a reference, and secret by
    name or shape (an empty value or a bare reference is none)."""
    rest = _REFERENCE.sub("", value).strip()
    if not rest:
        return False
    if secret_shaped(rest):
        return True
    if references(value):  # "Bearer ${env:X}": the secret is the reference
        return False
    return secret_name(name) and len(rest) >= 6 and rest.lower() not in {"true", "false", "none", "null"}


_FLAG = re.compile(r"^--?([A-Za-z][\w-]*)(=|$)")


def _secret_flag(argument: str) -> re.Match[str] | None:
    """``argument`` as a flag whose name says its value is a credential (--token, --client-secret, --github-token)."""
    flag = _FLAG.match(argument)
    if flag and (_SECRET_ARG.match(argument) or secret_name(flag.group(1).replace("-", "_"))):
        return flag
    return None


def secret_argument(previous: str | None, argument: str) -> bool:
    """Whether a command-line ``argument`` holds a literal secret: token-shaped, a URL with a
    password, ``--token=VALUE``, the value after ``--token``/``--api-key``/``--client-secret``,
    a header after or in ``--header``, or ``NAME=VALUE`` after ``-e``/``--env``."""
    if secret_shaped(argument):
        return True
    flag = _secret_flag(argument)
    if flag and flag.group(2) == "=":
        return literal_secret("TOKEN", argument.split("=", 1)[1])
    if previous is not None and (before := _secret_flag(previous)) and before.group(2) != "=":
        return literal_secret("TOKEN", argument)
    header = re.match(r"^(?:--header|-H)=(.*)$", argument, re.IGNORECASE | re.DOTALL)
    if header and ":" in header.group(1):
        name, value = header.group(1).split(":", 1)
        return literal_secret(name, value.strip())
    if previous is not None and previous.lower() in ("--header", "-h") and ":" in argument:
        name, value = argument.split(":", 1)
        return literal_secret(name, value.strip())
    assignment = re.match(r"^(?:--env=|-e=?)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", argument, re.DOTALL)
    if assignment and (argument.startswith(("--env=", "-e")) or (previous is not None and previous in ("-e", "--env"))):
        return literal_secret(assignment.group(1), assignment.group(2))
    return False


def env_name(text: str) -> str:
    """An environment variable name made from ``text``: GITHUB_TOKEN from github-token."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()
    return name if name and not name[0].isdigit() else f"V_{name}"


def spec_name(text: str, fallback: str = "server") -> str:
    """A spec name (1-40 of a-z 0-9 -, starting with a letter) made from ``text``."""
    name = re.sub(r"[^a-z0-9]+", "-", re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", text).lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"{fallback}-{name}".strip("-")
    return shorten(name, 40)


def shorten(name: str, limit: int) -> str:
    """``name`` cut to ``limit`` characters at a word boundary (``-``), never in the middle of a word
    unless its first word alone is longer."""
    if len(name) <= limit:
        return name
    cut = name.rfind("-", 0, limit + 1)
    return name[:cut] if cut > 0 else name[:limit]
