"""The audit chain's HMAC key: from an environment variable, or a file opened as the bwrap launcher
opens a file secret (a regular file with one link, reached without following a link) that is, in
addition, the user's own and readable by no one else (whoever could read the key could forge lines)."""

from __future__ import annotations

import os
import stat

from mcpspec.run.chain import MAX_KEY_BYTES, ChainKeyError, checked_key
from mcpspec.targets.bwrap.runtime import Refusal, TrustedPaths


def chain_key(variable: str | None, path: str | None, flags: tuple[str, str] = ("--audit-key-env", "--audit-key-file")) -> bytes | None:
    """The key named by ``variable`` or ``path`` (at most one), or None for an unkeyed chain; ChainKeyError
    when it cannot be read or is too short. ``flags`` name the options in messages."""
    if variable is not None and path is not None:
        raise ChainKeyError(f"give {flags[0]} or {flags[1]}, not both")
    if variable is not None:
        value = os.environb.get(os.fsencode(variable))
        if value is None:
            raise ChainKeyError(f"{flags[0]} {variable}: the variable is not set")
        return checked_key(value, f"${variable}")
    if path is not None:
        try:
            value = _read_private(os.path.abspath(path))
        except (Refusal, OSError) as exc:
            raise ChainKeyError(f"{flags[1]} {path}: {exc}") from None
        return checked_key(value, path)
    return None


def _read_private(path: str) -> bytes:
    fd = TrustedPaths().open_regular(path)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise Refusal(f"{path} must be yours and readable by no one else (chmod 600)")
        return os.read(fd, MAX_KEY_BYTES + 1)  # longer is refused by checked_key
    finally:
        os.close(fd)
