"""The request headers a client (or llm-d's endpoint picker in front of
it) means for the engine, passed upstream, and those echoed back to it
(`server.sidecar`: sidecar_config.py, docs/llm-d.md).

`ForwardedHeaders` keeps the allow-listed headers of each request in
`forwarded` for the upstream call (backend.py adds them to every request
it sends for this one) and copies the echoed ones onto the response's
start, error answers included. Only names on the lists cross; the gateway's
own upstream headers (its key, content type) can never be among them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.ops.sidecar_config import SidecarConfig

forwarded: ContextVar[dict[str, str] | None] = ContextVar("parsegate_forwarded_headers", default=None)


def forwarded_headers() -> dict[str, str]:
    """The current request's allow-listed headers, for the upstream request."""
    return forwarded.get() or {}


class ForwardedHeaders:
    """Pure ASGI middleware: the request's allow-listed headers into
    `forwarded`, its echoed ones onto the response."""

    def __init__(self, app: ASGIApp, sidecar_config: Callable[[], SidecarConfig]) -> None:
        self.app = app
        self.sidecar_config = sidecar_config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        config = self.sidecar_config()
        passed = set(config.forward_headers)
        echoed = set(config.echo_headers)
        sent: dict[str, str] = {}
        echo: list[tuple[bytes, bytes]] = []
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1")  # ASGI servers give names lowercased
            if name in passed:
                sent[name] = raw_value.decode("latin-1")
            if name in echoed:
                echo.append((raw_name, raw_value))
        forwarded.set(sent or None)
        if not echo:
            await self.app(scope, receive, send)
            return

        async def echoing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *echo]
            await send(message)

        await self.app(scope, receive, echoing)
