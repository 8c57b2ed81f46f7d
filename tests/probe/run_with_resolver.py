"""`mcpspec run` with the name resolver replaced (the seam in mcpspec.run.remote_address), so a test
controls what a host name resolves to without /etc/hosts and without DNS.

Usage: run_with_resolver.py JSON_MAPPING mcpspec-arguments... (JSON_MAPPING: {"name": ["address", ...]}).
"""

from __future__ import annotations

import json
import sys

from mcpspec.run import remote_address

MAPPING: dict[str, list[str]] = json.loads(sys.argv[1])


async def resolve(host: str, port: int) -> list[str]:
    if host not in MAPPING:
        raise OSError(f"{host}: not in the test's mapping")
    return MAPPING[host]


remote_address.RESOLVER = resolve
sys.argv = ["mcpspec", *sys.argv[2:]]
from mcpspec.__main__ import main  # noqa: E402

sys.exit(main())
