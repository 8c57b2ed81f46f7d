"""Boundary ceilings on what a server runs and how it is reached: image, environment, logging
and transport (see docs/boundary.md). Each excess names one concrete image, variable, setting or
connection the spec allows and the boundary does not."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

from mcpspec.boundary.excess import Excess
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import MINIMAL_ENV, HttpTransport

_DOCKER_HUB = "docker.io"


# --- images ---


@dataclass(frozen=True, slots=True)
class Image:
    """An image reference read as the engines read it: registry, repository path, tag, digest."""

    registry: str
    repository: str
    tag: str | None
    digest: str | None

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}" + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


def parse_image(reference: str) -> Image:
    """``python:3.12`` is ``docker.io/library/python:3.12``; a first part with a dot, a colon or
    ``localhost`` is a registry (IMAGE_PATTERN has validated the text)."""
    rest, _, digest = reference.partition("@")
    head, slash, tail = rest.partition("/")
    if slash and ("." in head or ":" in head or head == "localhost"):
        registry, path = head, tail
    else:
        registry, path = _DOCKER_HUB, rest
    name, colon, tag = path.rpartition(":") if ":" in path.rsplit("/", 1)[-1] else (path, "", "")
    if registry == _DOCKER_HUB and "/" not in name:
        name = f"library/{name}"
    return Image(registry, name, tag if colon else None, digest or None)


def image_within(image: Image, allowed: Image) -> bool:
    """The same registry, a repository at or below the allowed one (``ghcr.io/acme`` holds
    ``ghcr.io/acme/fetch``), and the allowed tag and digest where the boundary writes them."""
    if image.registry != allowed.registry:
        return False
    if image.repository != allowed.repository and not image.repository.startswith(allowed.repository + "/"):
        return False
    if allowed.digest is not None and image.digest != allowed.digest:
        return False
    return allowed.tag is None or image.tag == allowed.tag


def allowed_images(boundary: Plan, ceiling: EffectiveSandbox) -> list[str]:
    """The images a ceiling allows: its own, and every one the boundary's ``images`` lists (none: no limit)."""
    listed = [ceiling.image] if ceiling.image is not None else []
    return list(dict.fromkeys([*listed, *boundary.spec.images.values()]))


def images(sandbox: EffectiveSandbox, boundary: Plan, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    allowed = allowed_images(boundary, ceiling)
    if sandbox.image is None or not allowed:
        return
    image = parse_image(sandbox.image)
    if not any(image_within(image, parse_image(text)) for text in allowed):
        shown = ", ".join(allowed[:4]) + (f" and {len(allowed) - 4} more" if len(allowed) > 4 else "")
        yield Excess("BX008", sandbox.name, sandbox.origin("image"), f"{sandbox.name} may run image {image}; the boundary allows images {shown}")


# --- environment ---


def inherited(inherit: str | tuple[str, ...]) -> frozenset[str] | None:
    """The host variables passed through (None: all of them)."""
    if inherit == "all":
        return None
    if inherit == "none":
        return frozenset()
    if inherit == "minimal":
        return frozenset(MINIMAL_ENV)
    return frozenset(inherit)


def _unlisted(limit: frozenset[str]) -> str:
    """A variable a boundary does not pass: a well-known credential's name, else a fresh one."""
    return next(name for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "MCPSPEC_UNLISTED_VARIABLE") if name not in limit)


def env(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    mine, most = inherited(sandbox.env.inherit), inherited(ceiling.env.inherit)
    if most is None:
        return
    extra = _unlisted(most) if mine is None else next(iter(sorted(mine - most)), None)
    if extra is not None:
        passed = ", ".join(sorted(most)) or "none"
        yield Excess("BX009", sandbox.name, sandbox.origin("env.inherit"), f"{sandbox.name} may read the host's {extra} (env.inherit); the boundary passes through {passed}")


# --- logging ---


def logging(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    """Audit and redaction are minima (on in the boundary: on in the spec, with every field it
    records); raw prompts and full output are maxima (off in the boundary: off in the spec)."""
    mine, least = sandbox.logging, ceiling.logging
    name = sandbox.name
    for key, kept, required in (("logging.audit", mine.audit, least.audit), ("logging.redact", mine.redact, least.redact)):
        if required and not kept:
            yield Excess("BX010", name, sandbox.origin(key), f"{name} has {key} false; the boundary requires it on")
    if mine.audit and least.audit:
        dropped = [field for field in least.record if field not in mine.record]
        if dropped:
            yield Excess("BX010", name, sandbox.origin("logging.record"), f"{name}'s audit lines leave out {dropped[0]}; the boundary requires {', '.join(least.record)}")
    for key, logged, allowed in (("logging.raw_prompts", mine.raw_prompts, least.raw_prompts), ("logging.full_output", mine.full_output, least.full_output)):
        if logged and not allowed:
            yield Excess("BX010", name, sandbox.origin(key), f"{name} has {key} true; the boundary says false")


# --- transport ---


def _loopback(bind: str | None) -> bool:
    return bind is None or ipaddress.ip_address(bind).is_loopback


def _binds_within(bind: str | None, allowed: str | None) -> bool:
    """Loopback fits every bind; another address fits the same one or an unspecified boundary bind."""
    if _loopback(bind):
        return True
    if allowed is None:
        return False
    return ipaddress.ip_address(allowed).is_unspecified or ipaddress.ip_address(allowed) == ipaddress.ip_address(bind or "127.0.0.1")


def transport(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    """stdio fits every transport; HTTP (or SSE) only an HTTP boundary, binding no wider, with
    authentication where the boundary has it and no Origin the boundary does not accept."""
    mine, most, name = sandbox.transport, ceiling.transport, sandbox.name
    if not isinstance(mine, HttpTransport):
        return
    where = sandbox.origin("transport")
    if not isinstance(most, HttpTransport):
        yield Excess("BX011", name, sandbox.origin("transport.type"), f"{name} is reached over {mine.type} ({_endpoint(mine)}); the boundary allows stdio only")
        return
    if not _binds_within(mine.bind, most.bind):
        yield Excess("BX011", name, sandbox.origin("transport.bind"), f"{name} listens on {mine.bind}:{mine.port or 'its port'}; the boundary allows {most.bind or '127.0.0.1'}")
    mine_auth, most_auth = mine.auth.type if mine.auth else "none", most.auth.type if most.auth else "none"
    if mine_auth == "none" and most_auth != "none":
        yield Excess("BX011", name, sandbox.origin("transport.auth") if mine.auth else where, f"{name} accepts unauthenticated requests ({_endpoint(mine)}); the boundary requires {most_auth}")
    if most.allowed_origins is not None:
        if mine.allowed_origins is None:
            yield Excess("BX011", name, where, f"{name} accepts a request with any Origin (allowed_origins unset), e.g. https://attacker.example; the boundary accepts {', '.join(most.allowed_origins) or 'none'}")
        else:
            extra = [origin for origin in mine.allowed_origins if origin not in most.allowed_origins]
            if extra:
                yield Excess("BX011", name, sandbox.origin("transport.allowed_origins"), f"{name} accepts Origin {extra[0]}; the boundary accepts {', '.join(most.allowed_origins) or 'none'}")


def _endpoint(transport: HttpTransport) -> str:
    if transport.url is not None:
        return transport.url
    return f"{transport.bind or '127.0.0.1'}:{transport.port}" if transport.port else (transport.bind or "127.0.0.1")
