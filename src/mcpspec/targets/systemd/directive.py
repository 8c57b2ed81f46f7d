"""One setting of a unit file, built from typed values: a value's type picks its escaping.

A unit line is a :class:`Directive`, and :func:`directive` builds one only from
:class:`UnitValue` words, so a value from the spec reaches a unit file only through
the escaping its type stands for:

- :class:`UnitText`: free text (Description=), specifiers neutralized;
- :class:`UnitArg`: one word of a command line (ExecStart=), quoted and escaped;
- :class:`UnitEnv`: one Environment= assignment;
- :class:`UnitPath`: an absolute path of a path setting (BindPaths=), or refused;
- :class:`UnitInt`, :class:`UnitPercent`, :class:`UnitBool`, :class:`UnitNetwork`: numbers, yes/no, addresses;
- :class:`UnitName`: a name built by this target from validated names (live ``%i`` allowed);
- :class:`Fixed`: this target's own constant text (settings syntax and specifiers live).

A value the escaping refuses raises :class:`Refused` at the spec path it came from
(a TG004 finding), or ``Unrepresentable`` when no spec value is involved (a bug).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath
from mcpspec.targets.base import Refused
from mcpspec.targets.escape import Unrepresentable, unit_arg, unit_env, unit_path, unit_text

_KEY = re.compile(r"^[A-Z][A-Za-z0-9]*\Z")
# Settings syntax a name may hold: path and list separators, and the specifiers this
# target means (%i the instance, %t the runtime root, %d the credentials directory).
_NAME = re.compile(r"^(?:[A-Za-z0-9_.@:/+,=-]|%[itd])+\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# (control, spec path): where a refused value is reported
Origin = tuple[str, SpecPath]


class UnitValue:
    """A value as one unit setting carries it; subclasses pick the escaping."""

    origin: Origin | None = None

    def text(self) -> str:
        raise NotImplementedError

    def rendered(self) -> str:
        try:
            return self.text()
        except Unrepresentable as exc:
            if self.origin is None:
                raise
            raise Refused(*self.origin, str(exc)) from None


@dataclass(frozen=True, slots=True)
class _Escaped(UnitValue):
    """A string from the spec (or built from one), written through one escape function."""

    value: str
    origin: Origin | None = None


class UnitText(_Escaped):
    def text(self) -> str:
        return unit_text(self.value)


class UnitArg(_Escaped):
    def text(self) -> str:
        return unit_arg(self.value)


class UnitPath(_Escaped):
    def text(self) -> str:
        return unit_path(self.value)


@dataclass(frozen=True, slots=True)
class UnitEnv(UnitValue):
    name: str
    value: str
    origin: Origin | None = None

    def text(self) -> str:
        return unit_env(self.name, self.value)


@dataclass(frozen=True, slots=True)
class UnitInt(UnitValue):
    value: int

    def text(self) -> str:
        if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 0:
            raise Unrepresentable(f"{self.value!r} is not a count")
        return str(self.value)


@dataclass(frozen=True, slots=True)
class UnitPercent(UnitValue):
    """A share of one CPU as a CPUQuota= percentage: at most two decimals, never 0."""

    cpus: float

    def text(self) -> str:
        hundredths = max(1, round(self.cpus * 10000))
        whole, part = divmod(hundredths, 100)
        return f"{whole}%" if not part else f"{whole}.{part:02d}".rstrip("0") + "%"


@dataclass(frozen=True, slots=True)
class UnitBool(UnitValue):
    value: bool

    def text(self) -> str:
        return "yes" if self.value else "no"


@dataclass(frozen=True, slots=True)
class UnitNetwork(UnitValue):
    """An address or network of IPAddressAllow=/IPAddressDeny=, written as given once it parses."""

    value: str

    def text(self) -> str:
        try:
            ipaddress.ip_network(self.value, strict=False)
        except ValueError:
            raise Unrepresentable(f"{self.value!r} is not an address or network") from None
        return self.value


@dataclass(frozen=True, slots=True)
class UnitName(UnitValue):
    """A unit, user, directory or credential name that this target built from validated
    names; specifiers in it (``%i``, ``%t``, ``%d``) are meant and stay live."""

    value: str

    def text(self) -> str:
        if not _NAME.match(self.value):
            raise Unrepresentable(f"{self.value!r} is not a name a unit setting may hold")
        return self.value


@dataclass(frozen=True, slots=True)
class Fixed(UnitValue):
    """Constant text of this target (never a spec value): written as is, specifiers live."""

    value: str

    def text(self) -> str:
        if _CONTROL.search(self.value):
            raise Unrepresentable("a control character in constant unit text")
        return self.value


@dataclass(frozen=True, slots=True)
class Joined(UnitValue):
    """Values written one after the other with nothing between (``-`` + a path, ``src:dst``)."""

    parts: tuple[UnitValue, ...]

    def text(self) -> str:
        return "".join(part.rendered() for part in self.parts)


def joined(*parts: UnitValue) -> Joined:
    return Joined(parts)


@dataclass(frozen=True, slots=True)
class Directive:
    """One ``Key=value`` line; build it with :func:`directive` or :func:`fixed`."""

    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def directive(key: str, *words: UnitValue) -> Directive:
    """``key=`` and the words, separated by spaces, each escaped by its type."""
    if not _KEY.match(key):
        raise Unrepresentable(f"{key!r} is not a setting name")
    return Directive(key, " ".join(word.rendered() for word in words))


@functools.lru_cache(maxsize=1024)
def fixed(line: str) -> Directive:
    """A constant setting of this target, ``Key=value`` (no spec value in it). A unit's
    constant lines repeat in every unit: each is checked once (a Directive is immutable)."""
    key, _, value = line.partition("=")
    return directive(key, Fixed(value))
