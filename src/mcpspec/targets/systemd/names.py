"""The names one server's units, users and paths use on the host.

Project and server names are ``[a-z0-9-]``, so ``-`` inside them is ambiguous as a
separator: ``_``, which neither may hold, joins them (``mcp-<project>_<server>``),
and two projects on one host, or two servers of one project, never share a unit,
a directory or a transient user.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

SQUID_PORT_BASE = 20000
SQUID_PORT_SPAN = 20000
UNIT_NAME_MAX = 255  # systemd's limit, including the suffix
USER_NAME_MAX = 31  # a DynamicUser= name must be a valid user name in the strict sense
# What a unit name's prefix may hold, and the names the spec models allow.
_UNIT_PART = re.compile(r"^[a-z0-9][a-z0-9-]*\Z")


class BadName(ValueError):
    """A project or server name that cannot become a unit name (a TG004 finding)."""


@dataclass(frozen=True, slots=True)
class Names:
    """Every host-side name of one server. Build it with :func:`names`, which validates."""

    project: str
    server: str

    @property
    def stem(self) -> str:
        return f"mcp-{self.project}_{self.server}"

    @property
    def service(self) -> str:
        return f"{self.stem}@.service"

    @property
    def socket(self) -> str:
        return f"{self.stem}.socket"

    @property
    def squid_service(self) -> str:
        return f"{self.stem}_squid.service"

    @property
    def egress_socket(self) -> str:
        return f"{self.stem}_egress.socket"

    @property
    def egress_service(self) -> str:
        return f"{self.stem}_egress.service"

    @property
    def http_socket(self) -> str:
        """An HTTP server's port on the host's loopback, one per run (a template like the server's)."""
        return f"{self.stem}_http@.socket"

    @property
    def http_forwarder(self) -> str:
        """The systemd-socket-proxyd that the http socket starts, inside the run's network namespace."""
        return f"{self.stem}_http@.service"

    @property
    def squid_conf(self) -> str:
        return f"{self.server}.squid.conf"

    @property
    def listen_path(self) -> str:
        return f"/run/mcp-{self.project}/{self.server}.sock"

    @property
    def egress_path(self) -> str:
        # A directory of its own (0700 root): the socket is 0666 so that the transient
        # user can connect through its bind mount, and only the directory keeps others out.
        return f"/run/mcp-{self.project}_egress/{self.server}.sock"

    @property
    def run_dir(self) -> str:
        """Relative to /run (RuntimeDirectory=); %i is the instance."""
        return f"mcp-{self.project}/{self.server}/%i"

    @property
    def squid_dir(self) -> str:
        return f"{self.stem}_squid"

    @property
    def squid_conf_path(self) -> str:
        return f"/etc/mcpspec/{self.project}/{self.server}.squid.conf"

    @property
    def squid_port(self) -> int:
        return SQUID_PORT_BASE + self.crc % SQUID_PORT_SPAN

    @property
    def squid_name(self) -> str:
        """squid -n: names its shared memory segments (in the host's /dev/shm), so squids do not collide; letters and digits only."""
        return f"mcpspec{self.crc:08x}"

    @property
    def user(self) -> str:
        """The transient user of one instance (``%i`` is the instance): one uid per run,
        so that concurrent runs cannot read or signal each other. A hash keeps it short
        enough for a user name; an instance name that does not fit makes systemd refuse
        to start that instance (it never falls back to a shared user)."""
        return f"m{self.crc:08x}-%i"

    @property
    def identifier(self) -> str:
        """SyslogIdentifier= of the server's own lines."""
        return self.stem

    @property
    def crc(self) -> int:
        return zlib.crc32(f"{self.project}/{self.server}".encode())


def instance_of(template: str, instance: str) -> str:
    """The name of one instance of a template unit (``x@.service`` -> ``x@<instance>.service``)."""
    return template.replace("@.", f"@{instance}.", 1)


def names(project: str, server: str) -> Names:
    """The names of one server; raises BadName for a name no unit can carry."""
    for what, value in (("project", project), ("server", server)):
        if not _UNIT_PART.match(value):
            raise BadName(f"{what} name {value!r} cannot be part of a systemd unit name (only a-z, 0-9 and -)")
    result = Names(project, server)
    longest = f"{result.stem}_egress.service"
    if len(longest) > UNIT_NAME_MAX:
        raise BadName(f"unit name {longest!r} is longer than systemd's {UNIT_NAME_MAX} characters")
    return result


def run_id_room() -> int:
    """How many characters a run id (an instance name) may have: the transient user's name holds it."""
    return USER_NAME_MAX - len(Names("x", "x").user.replace("%i", ""))
