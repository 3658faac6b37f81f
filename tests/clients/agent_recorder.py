"""What an agent CLI sent the gateway and what it got back, recorded by an
ASGI wrapper around the app: each HTTP request's method, path, status and
JSON body, and each WebSocket message in and out (a `response.create`
turn, its events). `failures()` lists every request that did not succeed,
which a long agent session must not have."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FAILED_EVENTS = ("error", "response.failed", "response.incomplete")


@dataclass
class Exchange:
    """One HTTP request (`method`, `path`, `status`, `body`), or one
    WebSocket turn (`method` "WS", the `response.create` as `body`, the
    type of its final message as `ending`)."""

    method: str
    path: str
    body: object = None
    status: int | None = None
    ending: str | None = None
    events: list[dict] = field(default_factory=list)


class Recorder:
    """ASGI wrapper: records the exchanges of every client of `app`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []
        self.upgrades = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(scope["method"], scope["path"])
        self.exchanges.append(exchange)
        chunks: list[bytes] = []

        async def reading() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    exchange.body = _json(b"".join(chunks))
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            await send(message)

        await self.app(scope, reading, sending)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.upgrades += 1
        turns: list[Exchange] = []

        async def reading() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive":
                turn = Exchange("WS", scope["path"], _json(message.get("bytes") or message.get("text", "").encode()))
                turns.append(turn)
                self.exchanges.append(turn)
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "websocket.send" and turns:
                event = _json(message.get("bytes") or message.get("text", "").encode())
                if isinstance(event, dict):
                    turns[-1].events.append(event)
                    if event.get("type") in ("response.completed", *FAILED_EVENTS):
                        turns[-1].ending = event["type"]
            elif message["type"] == "websocket.http.response.start":  # the upgrade refused
                self.exchanges.append(Exchange("GET", scope["path"], status=message["status"]))
            await send(message)

        await self.app(scope, reading, sending)

    def posts(self, path: str) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if exchange.method == "POST" and exchange.path == path]

    def turns(self) -> list[Exchange]:
        """The `response.create` turns over WebSockets."""
        return [exchange for exchange in self.exchanges if exchange.method == "WS"]

    def failures(self) -> list[Exchange]:
        """The HTTP requests answered 400 or above, and the WebSocket turns
        that ended in an error, a failed or an incomplete response."""
        failed = []
        for exchange in self.exchanges:
            if exchange.method == "WS":
                if exchange.ending != "response.completed":
                    failed.append(exchange)
            elif exchange.status is None or exchange.status >= 400:
                failed.append(exchange)
        return failed


def _json(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")
