"""What `mcpspec run` needs of a remote server before it relays: its URL, its credential, its audience.

An external server with ``transport: {type: http, url: ...}`` is relayed through ``RemoteServer``.
Its credential is the one secret the server is given (``secrets: [{use: NAME, as: ...}]``; the
``as`` form is not used: nothing runs here to read it), sent as a bearer token when
``transport.auth.type`` is ``bearer`` or ``oauth2``. An OAuth 2.1 access token is whatever the
secret's provider holds (a token issued for the server's URL, RFC 8707); the client never supplies
one. The audit records the server's canonical URL as its ``resource``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.run.launch import LaunchError
from mcpspec.run.relay import Audit
from mcpspec.run.remote import RemoteServer
from mcpspec.run.remote_address import RemoteRefused, parse_endpoint
from mcpspec.spec.models import HttpTransport

STOP_GRACE = 10.0


class RemoteSide:
    """The server side of a remote server: the bridge's end of the relay's streams."""

    def __init__(self, bridge: RemoteServer, server_in: asyncio.StreamWriter, server_out: asyncio.StreamReader, task: asyncio.Task[None], described: dict[str, Any]) -> None:
        self.bridge, self.server_in, self.server_out, self.task = bridge, server_in, server_out, task
        self.described = described  # what session_start records

    def interrupt(self) -> None:
        self.task.cancel()  # the bridge closes its end: the relay sees the server end

    async def stop(self, client_ended: bool) -> int | None:
        finished, _ = await asyncio.wait({self.task}, timeout=STOP_GRACE if client_ended else 2.0)
        if not finished:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        return None


def credential_of(sandbox: EffectiveSandbox, secrets: Sequence[tuple[str, str]]) -> str | None:
    """The bearer token of ``sandbox``, or None when its auth sends none; LaunchError when the spec
    cannot be honoured as written."""
    transport = sandbox.transport
    assert isinstance(transport, HttpTransport)
    kind = transport.auth.type if transport.auth is not None else "none"
    names = [grant.name for grant in sandbox.secrets]
    if kind == "mtls":
        raise LaunchError(f"{sandbox.name}: transport.auth.type mtls is not supported by mcpspec run (bearer and oauth2 are)")
    if kind == "none":
        if names:
            raise LaunchError(f"{sandbox.name}: the server is given secret {names[0]!r} but transport.auth.type is none: set bearer or oauth2 to send it")
        return None
    if len(names) != 1:
        raise LaunchError(f"{sandbox.name}: transport.auth.type {kind} sends one secret as the bearer token: give the server exactly one (it has {len(names)})")
    values = [value for name, value in secrets if name == names[0]]
    if not values or not values[0]:
        raise LaunchError(f"{sandbox.name}: secret {names[0]!r} cannot be read (or is empty): the server is not reached without it")
    token = values[0].strip()
    if not token or any(ord(char) < 0x21 or ord(char) > 0x7E for char in token):
        raise LaunchError(f"{sandbox.name}: secret {names[0]!r} is not a bearer token (it holds spaces, control or non-ASCII characters)")
    return token


async def remote_side(sandbox: EffectiveSandbox, secrets: Sequence[tuple[str, str]], audit: Audit, clean: Callable[[str], str]) -> RemoteSide:
    transport = sandbox.transport
    if not isinstance(transport, HttpTransport) or transport.type != "http" or not transport.url:
        raise LaunchError(f"{sandbox.name}: an external server is relayed over streamable HTTP: give transport {{type: http, url: https://...}}")
    try:
        endpoint = parse_endpoint(transport.url)
    except RemoteRefused as exc:
        raise LaunchError(f"{sandbox.name}: {exc}") from None
    credential = credential_of(sandbox, secrets)

    def note(text: str) -> None:
        sys.stderr.write(f"mcpspec run: {sandbox.name}: {clean(text)}\n")
        sys.stderr.flush()

    bridge = RemoteServer(endpoint, credential, audit, note)
    server_in, server_out, task = await bridge.open()
    described: dict[str, Any] = {"remote": endpoint.canonical, "resource": endpoint.canonical, "auth": transport.auth.type if transport.auth else "none"}
    if transport.auth is not None and transport.auth.audience and transport.auth.audience != endpoint.canonical:
        described["audience"] = transport.auth.audience
    return RemoteSide(bridge, server_in, server_out, task, described)
