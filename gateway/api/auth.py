"""Client authentication: `Authorization: Bearer <key>` (or Anthropic's
`x-api-key: <key>`) against `server.api_keys` (and `server.api_keys_file`),
compared in constant time.

The keys are read from the app's current config on every request, so a
reload takes effect at once. No key is ever logged or echoed.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request
from starlette.requests import HTTPConnection

from gateway.ops.errors import ApiError


def given_key(request: HTTPConnection) -> bytes | None:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return given.strip().encode()
    api_key = request.headers.get("x-api-key")
    return api_key.strip().encode() if api_key is not None else None


def _accepted(given: bytes | None, keys: list[str]) -> bool:
    """Every configured key is compared (no early exit), each in constant time."""
    matches = [hmac.compare_digest(given or b"", key.encode()) for key in keys]
    return given is not None and any(matches)


async def require_api_key(request: Request) -> None:
    """The /v1 routes' dependency: 401 unless the request carries a configured key
    (open when no key is configured)."""
    keys = request.app.state.config.server.api_keys
    if keys and not _accepted(given_key(request), keys):
        raise ApiError(401, "missing or invalid API key", type="authentication_error", code="invalid_api_key")


async def require_openapi_key(request: Request) -> None:
    """For `/openapi.json` (it lists the model names): `require_api_key`
    unless `server.openapi_public` is true."""
    if not request.app.state.config.server.openapi_public:
        await require_api_key(request)


async def require_metrics_key(request: Request) -> None:
    """For a metrics route: `require_api_key` when `server.metrics_auth` is true."""
    if request.app.state.config.server.metrics_auth:
        await require_api_key(request)


def owner_of(request: Request) -> str:
    """Whose stored responses and conversations a request may reach: a
    SHA-256 of its API key (the key itself is never stored), or "" for
    everyone when no key is configured (docs/state.md, "Isolation")."""
    if not request.app.state.config.server.api_keys:
        return ""
    return hashlib.sha256(given_key(request) or b"").hexdigest()
