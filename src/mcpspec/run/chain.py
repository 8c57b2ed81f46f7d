"""The hash chain of a run's audit lines: each line seals itself and names the seal of the line before.

A chained line is the audit record's compact JSON with four fields appended at its end, in this order
and this spelling (no space, ASCII)::

    {...record...,"chain":"<32 hex>","seq":N,"prev":"<64 hex>","hash":"<64 hex>"}

The first line of a run (``seq`` 0) also carries ``"alg"`` and ``"spec_sha256"`` between ``seq`` and
``prev``. What is hashed (the *prefix*) is the line's bytes as written, from its first byte up to and
excluding ``,"hash":``; ``hash`` is H(prefix). ``prev`` is the previous line's ``hash``; for line 0 it is
H(``ANCHOR`` + chain + ``"\\n"`` + spec_sha256), so a run's first line names its run nonce (``chain``,
128 random bits) and the spec it ran. H is SHA-256, or HMAC-SHA256 under a key (``alg``
``hmac-sha256``): a keyed chain cannot be recomputed by someone who edits the file without the key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

ANCHOR = b"mcpspec-audit-chain/1\n"
SUFFIX_CHARS = 320  # what the chain adds to a line at most (the limit of the record is lowered by it)
CHAIN_FIELDS = frozenset({"chain", "seq", "alg", "spec_sha256", "prev", "hash"})
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096
HEX64 = re.compile(r"[0-9a-f]{64}")
# The end of a sealed line: the prefix, then its hash (the line's last field, as written).
SEALED = re.compile(rb'(?P<prefix>\{.*),"hash":"(?P<hash>[0-9a-f]{64})"\}', re.DOTALL)


class ChainKeyError(ValueError):
    """The chain key cannot be used (too short, not set)."""


def digest(key: bytes | None, data: bytes) -> str:
    """H(data): SHA-256, or HMAC-SHA256 under ``key``."""
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def anchor(key: bytes | None, chain: str, spec_sha256: str) -> str:
    """The ``prev`` of a run's first line."""
    return digest(key, ANCHOR + chain.encode("ascii") + b"\n" + spec_sha256.encode("ascii"))


def algorithm(key: bytes | None) -> str:
    return "sha256" if key is None else "hmac-sha256"


def checked_key(value: bytes | None, source: str) -> bytes | None:
    """A key fit for HMAC, or None; raises ChainKeyError when ``source`` gives one too short to be a key."""
    if value is None:
        return None
    value = value.strip()
    if len(value) < MIN_KEY_BYTES:
        raise ChainKeyError(f"the audit chain key in {source} is shorter than {MIN_KEY_BYTES} bytes")
    if len(value) > MAX_KEY_BYTES:
        raise ChainKeyError(f"the audit chain key in {source} is longer than {MAX_KEY_BYTES} bytes")
    return value


@dataclass
class Chain:
    """Seals a run's lines in the order they are written (the caller holds the sink's lock)."""

    spec_sha256: str
    key: bytes | None = None
    chain: str = ""
    seq: int = 0
    last: str = ""

    def __post_init__(self) -> None:
        self.chain = self.chain or secrets.token_hex(16)
        self.last = anchor(self.key, self.chain, self.spec_sha256)

    def seal(self, record_json: str) -> str:
        """``record_json`` (a compact JSON object) with the chain fields appended, without a newline."""
        assert record_json.endswith("}")
        head = f'{record_json[:-1]}{"," if len(record_json) > 2 else ""}"chain":"{self.chain}","seq":{self.seq}'
        if self.seq == 0:
            head += f',"alg":"{algorithm(self.key)}","spec_sha256":"{self.spec_sha256}"'
        prefix = f'{head},"prev":"{self.last}"'
        self.last = digest(self.key, prefix.encode("ascii"))
        self.seq += 1
        return f'{prefix},"hash":"{self.last}"}}'
