"""Helpers the subprocess rules share: reading launch commands."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.perf import quick_init

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "cmd", "powershell", "pwsh"})
ESCALATORS = frozenset({"sudo", "doas", "su", "pkexec", "runas"})
# Programs that run the next word as the real program.
WRAPPERS = frozenset({"env", "exec", "nohup", "command"})
_OPERATOR = re.compile(r"^[;&|()<>]+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@functools.lru_cache(maxsize=4096)  # the same few words start most commands (asked ~20 times per server)
def program_name(word: str) -> str:
    """``/usr/bin/bash`` -> ``bash``; ``PowerShell.exe`` -> ``powershell``."""
    base = word.rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    if "." not in base:
        return base
    for suffix in (".exe", ".cmd", ".bat"):
        base = base.removesuffix(suffix)
    return base


def program_index(words: tuple[str, ...]) -> int | None:
    """Index of the program a simple command runs, past ``env``, ``VAR=value`` and the like."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
        elif program_name(word) in WRAPPERS:
            index += 1
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            return index
    return None


def shell_script_index(words: tuple[str, ...]) -> int | None:
    """Index of the ``-c`` (``/c``, ``-Command``) flag when ``words`` runs a shell on a script."""
    return _script_flag(words, program_index(words))


def _script_flag(words: tuple[str, ...], start: int | None) -> int | None:
    """:func:`shell_script_index` of ``words``, whose program is at ``start`` (:func:`program_index`)."""
    if start is None or program_name(words[start]) not in SHELLS:
        return None
    shell = program_name(words[start])
    for index in range(start + 1, len(words)):
        flag = words[index]
        if shell == "cmd":
            if flag.lower() in ("/c", "/k"):
                return index
        elif shell in ("powershell", "pwsh"):
            if flag.lower() in ("-c", "-command", "-e", "-ec", "-encodedcommand"):
                return index
        elif re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", flag):
            return index
        if not flag.startswith(("-", "/")):
            return None
    return None


def script_commands(script: str) -> list[tuple[str, ...]]:
    """The simple commands of a shell script: words split at ``;``, ``&&``, ``|``, parentheses."""
    text = script.replace("`", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to a rough split
        tokens = re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)
    commands: list[tuple[str, ...]] = []
    current: list[str] = []
    for token in tokens:
        if _OPERATOR.match(token):
            if current:
                commands.append(tuple(current))
            current = []
        else:
            current.append(token.removeprefix("$"))
    if current:
        commands.append(tuple(current))
    return [command for command in commands if any(command)]


@quick_init
@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command a server's launch runs, and where each of its words is written."""

    words: tuple[str, ...]
    at: SpecPath  # the command (its words are its items) or the script string that holds them all
    in_script: bool
    start: int | None  # program_index(words): the program the command runs, None for none

    def path(self, index: int) -> SpecPath:
        """Where word ``index`` is written."""
        return self.at if self.in_script else (*self.at, index)


def server_segments(plan: Plan, server: EffectiveSandbox) -> tuple[Segment, ...]:
    """:func:`segments` of a server of ``plan``, made once per plan (several rules read every server's)."""
    memo: dict[str, tuple[Segment, ...]] = plan.derived.setdefault("command_segments", {})
    found = memo.get(server.name)
    if found is None:
        found = memo[server.name] = tuple(segments(server))
    return found


def segments(server: EffectiveSandbox) -> list[Segment]:
    """The simple commands of a server's launch: its argv, and the commands of any shell script in it.

    Words of a script share the path of the string that holds the script.
    """
    command_path: SpecPath = (*server.path, "command")
    if not server.command:
        return []
    if server.command_is_shell:
        return [_script_segment(words, command_path) for words in script_commands(server.command[-1])]
    argv = server.command
    start = program_index(argv)
    found = [Segment(argv, command_path, False, start)]
    flag = _script_flag(argv, start)
    if flag is not None and flag + 1 < len(argv):
        script_path: SpecPath = (*command_path, flag + 1)
        found += [_script_segment(words, script_path) for words in script_commands(argv[flag + 1])]
    return found


def _script_segment(words: tuple[str, ...], path: SpecPath) -> Segment:
    return Segment(words, path, True, program_index(words))
