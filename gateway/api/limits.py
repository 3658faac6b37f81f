"""Request limits: the body size (413), its encoding (415), and the number
of requests in flight (429 with `Retry-After`). The size and the number
read the current config on every request, so a reload changes them. A
response made over the WebSocket transport counts as a request in flight
while it runs (responses_socket.py); an idle connection does not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.errors import surface_error
from gateway.ops.errors import ApiError
from gateway.ops.server_config import ServerConfig

RETRY_AFTER_SECONDS = 1
LIMIT_SCOPE_KEY = "parsegate.concurrency_limit"  # a WebSocket scope's: the limit its responses count against
_UNLIMITED_PATHS = ("/health", "/metrics")  # probes and scrapes get through a full gateway


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 as soon as it is longer than `limit` bytes;
    415 for a compressed one, which would otherwise read as bad JSON."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        message = f"Content-Encoding {encoding!r} is not supported: send the body uncompressed"
        raise ApiError(415, message, code="unsupported_content_encoding")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise _too_large(limit)
        parts.append(part)
    return b"".join(parts)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"the request body is larger than {limit} bytes", code="request_too_large")


class ConcurrencyLimit:
    """ASGI middleware: past `max_concurrent_requests` requests in flight (a
    stream counts until it ends), answer 429 with `Retry-After`, in the
    error shape of the route asked for."""

    def __init__(self, app: ASGIApp, server_config: Callable[[], ServerConfig]) -> None:
        self.app = app
        self._server_config = server_config
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            scope[LIMIT_SCOPE_KEY] = self
        if scope["type"] != "http" or scope["path"] in _UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        full = self.full()
        if full is not None:
            await surface_error(Request(scope), full)(scope, receive, send)
            return
        self.active += 1
        done = False

        async def send_counted(message: Message) -> None:
            nonlocal done
            if message["type"] == "http.response.body" and not message.get("more_body") and not done:
                done = True  # free the slot before the client sees the end
                self.active -= 1
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            if not done:
                self.active -= 1

    @contextmanager
    def counted(self) -> Iterator[None]:
        """One request more in flight while the block runs (a WebSocket's
        response); the 429 when `max_concurrent_requests` are already."""
        full = self.full()
        if full is not None:
            raise full
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1

    def full(self) -> ApiError | None:
        """The 429 for one request more, when `max_concurrent_requests` are in flight."""
        limit = self._server_config().max_concurrent_requests
        if self.active < limit:
            return None
        message = f"more than {limit} requests in flight; retry later"
        return ApiError(429, message, code="too_many_requests", headers={"retry-after": str(RETRY_AFTER_SECONDS)})
