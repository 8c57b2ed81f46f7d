"""What an approver is shown of a call: exactly what the server will receive, but the spec's own secrets.

Nothing is guessed at: a string that merely looks like a credential (a URL with a password, a token
shape) is shown as it is, since the server gets it as it is and a masker that rewrites it can hide a
payload (``ftp://backup:;curl${IFS}...|sh;#@archive``). Only the values of the secrets the spec gives
the server are replaced, each by ``[masked: secret NAME]``, and ``masked`` says where: the string's
path, the offset of the marker and the secret's name, so the arguments the server gets are the view
with each listed marker replaced by that secret's value (even if a string holds marker-like text
itself). Nothing is cut: the view says how long the arguments are and holds them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_SECRET_CHARS = 4  # as the audit log: shorter values would mask common text and protect nothing


class Unshowable(ValueError):
    """The arguments cannot be shown so that the approver sees all the server would get."""


def marker(name: str) -> str:
    return f"[masked: secret {name}]"


@dataclass(frozen=True)
class Masked:
    """One secret value replaced in the view: in the string at ``path`` (a key when ``key``), at ``at``."""

    path: tuple[str | int, ...]
    at: int
    secret: str
    key: bool = False
    trimmed: bool = False  # the value without its surrounding whitespace (a file's ends in a newline)

    def as_json(self) -> dict[str, Any]:
        return {"path": list(self.path), "at": self.at, "secret": self.secret, **({"in": "key"} if self.key else {}), **({"trimmed": True} if self.trimmed else {})}


class SecretMarks:
    """Replaces exact occurrences of the spec's secret values, naming each."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        spellings = {(name, form, form != value) for name, value in secrets for form in (value, value.strip())}  # a file's value ends in a newline
        triples = {spelling for spelling in spellings if len(spelling[1]) >= MIN_SECRET_CHARS}
        self.secrets = sorted(triples, key=lambda item: (-len(item[1]), item[0]))  # the longest spelling wins an overlap

    def text(self, value: str, path: tuple[str | int, ...], key: bool, found: list[Masked]) -> str:
        out: list[str] = []
        position = 0
        length = 0
        while position < len(value):
            hit = self._first(value, position)
            if hit is None:
                break
            start, name, secret, trimmed = hit
            out.append(value[position:start])
            length += start - position
            found.append(Masked(path, length, name, key, trimmed))
            out.append(marker(name))
            length += len(marker(name))
            position = start + len(secret)
        out.append(value[position:])
        return "".join(out)

    def _first(self, value: str, position: int) -> tuple[int, str, str, bool] | None:
        best: tuple[int, str, str, bool] | None = None
        for name, secret, trimmed in self.secrets:
            start = value.find(secret, position)
            if start >= 0 and (best is None or start < best[0]):
                best = (start, name, secret, trimmed)
        return best

    def view(self, value: Any, path: tuple[str | int, ...] = (), found: list[Masked] | None = None) -> tuple[Any, list[Masked]]:
        """``value`` (a JSON value) with the secret values replaced, and where."""
        found = [] if found is None else found
        if isinstance(value, str):
            return self.text(value, path, False, found), found
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for name, item in value.items():
                marks: list[Masked] = []
                shown = self.text(str(name), (), True, marks)
                if shown in out:  # two keys show alike: the approver would see one of them only
                    raise Unshowable(f"two keys of the arguments read the same once secrets are masked: {shown[:64]!r}")
                found += [Masked((*path, shown), mark.at, mark.secret, True, mark.trimmed) for mark in marks]
                out[shown] = self.view(item, (*path, shown), found)[0]
            return out, found
        if isinstance(value, list | tuple):
            return [self.view(item, (*path, index), found)[0] for index, item in enumerate(value)], found
        return value, found


def visible_json(value: Any) -> str:
    """``value`` as JSON in printable ASCII: every control, invisible, bidi or non-ASCII character
    (DEL too) is a ``\\uXXXX`` escape, so nothing can move a cursor, reorder text or pass for another
    character, and ``json.loads`` gives back exactly ``value``."""
    return json.dumps(value, ensure_ascii=True, separators=(", ", ": ")).replace("\x7f", "\\u007f")


def restored(view: Any, masked: Sequence[dict[str, Any]], values: dict[str, str]) -> Any:
    """The arguments the server gets, from what the approver saw (``values``: secret name -> value).

    A masked key's entry has the key as the last step of its path; the strings are restored deepest
    first (a key after what lies under it), each right to left (its offsets stay true)."""
    result = json.loads(json.dumps(view))
    groups: dict[tuple[tuple[Any, ...], bool], list[tuple[int, str, bool]]] = {}
    for entry in masked:
        mark = (int(entry["at"]), str(entry["secret"]), bool(entry.get("trimmed")))
        groups.setdefault((tuple(entry["path"]), entry.get("in") == "key"), []).append(mark)
    for (path, key), marks in sorted(groups.items(), key=lambda group: -(len(group[0][0]) * 2 - group[0][1])):
        holder: Any = result
        for step in path[:-1]:
            holder = holder[step]
        text = path[-1] if key else holder[path[-1]]
        for at, name, trimmed in sorted(marks, reverse=True):
            text = text[:at] + (values[name].strip() if trimmed else values[name]) + text[at + len(marker(name)) :]
        if key:
            holder[text] = holder.pop(path[-1])
        else:
            holder[path[-1]] = text
    return result
