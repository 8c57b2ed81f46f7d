"""The addresses of the network namespace this process runs in: every local address
of both families, read from the kernel when the proxy starts.

A squid in the host's network namespace reaches the host's own services on every
address the host holds (a public IPv4 address, a global IPv6 one), not only on
127.0.0.1; those addresses are the host's own, so the egress rules refuse them
like loopback. They are known only on the machine and only at launch, so this is
read then: the bwrap launcher carries this text ahead of its runtime, and the
systemd target's squid unit runs it (ExecStartPre=+) to write squid's ACL file.

Sources: /proc/net/fib_trie (the local routes of IPv4: each address and each
``local`` route, whatever interface holds it), /proc/net/if_inet6 (each IPv6
address) and /proc/net/ipv6_route (IPv6 ``local`` routes). No netlink, no
third-party module: only Python's standard library, with nothing imported at
the top but ``ipaddress`` and ``re``. The unspecified addresses 0.0.0.0 and ::
(which reach the host itself) are always among them, so the list is never empty.
"""

import ipaddress
import re

OWN_ADDRESS_SOURCES = ("/proc/net/fib_trie", "/proc/net/if_inet6", "/proc/net/ipv6_route")
_FIB_LEAF = re.compile(r"^[\s|+`-]*-- (\d+\.\d+\.\d+\.\d+)\s*$")
_FIB_LOCAL = re.compile(r"^\s*/(\d+) \w+ LOCAL\s*$")
_RTF_LOCAL = 0x80000000


def _v6(hex_text: str, prefix: int) -> "ipaddress.IPv6Network":
    return ipaddress.IPv6Network((int(hex_text, 16), prefix), strict=False)


def own_networks_from(fib_trie: str, if_inet6: str, ipv6_route: str) -> list[str]:
    """The local networks these /proc/net texts describe, collapsed, as squid ``dst`` values.

    Raises ValueError where a text is not of the kernel's form (the caller then refuses to start)."""
    v4: list[ipaddress.IPv4Network] = [ipaddress.IPv4Network("0.0.0.0/32")]
    v6: list[ipaddress.IPv6Network] = [ipaddress.IPv6Network("::/128")]
    leaf = ""
    for line in fib_trie.splitlines():
        if found := _FIB_LEAF.match(line):
            leaf = found.group(1)
        elif (local := _FIB_LOCAL.match(line)) and leaf:
            v4.append(ipaddress.IPv4Network(f"{leaf}/{local.group(1)}", strict=False))
    for line in if_inet6.splitlines():
        words = line.split()
        if words:
            v6.append(_v6(words[0], 128))
    for line in ipv6_route.splitlines():
        words = line.split()
        if len(words) >= 9 and int(words[8], 16) & _RTF_LOCAL:
            v6.append(_v6(words[0], int(words[1], 16)))
    return [str(n) for n in ipaddress.collapse_addresses(v4)] + [str(n) for n in ipaddress.collapse_addresses(v6)]


def own_networks() -> list[str]:
    """The local networks of this process's network namespace (raises OSError or ValueError)."""
    texts = []
    for path in OWN_ADDRESS_SOURCES:
        with open(path, encoding="ascii") as handle:
            texts.append(handle.read(1 << 24))
    if "Local:" not in texts[0]:
        raise ValueError("/proc/net/fib_trie has no local table")
    return own_networks_from(*texts)
