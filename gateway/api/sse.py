"""Server-sent events out, on the hot path: the gateway's pre-framed events.

The gateway frames its events once (`data: …\\n\\n`, one orjson encode
per chunk), so `EventStream` sends them as they are, with starlette's
`StreamingResponse` (which stops the stream when the client disconnects):
sse-starlette's EventSourceResponse would open a cancel scope per event
for its per-send timeout, the largest per-chunk cost it adds. It sends the
headers an event stream needs and, like sse-starlette, a comment line
whenever the stream has been quiet for `ping_seconds` (counted from the
last thing sent, so never more than that apart), so that proxies keep it
open (or the surface's own keep-alive event: Anthropic's `ping`).

Measured (`python -m bench.sse_library_bench`, bench/README.md "Card
libraries"): sending the same event in-process, sse-starlette 3.7.0 costs
8.1 µs per event against 0.8 µs here for one stream (a bare `send` loop:
1.0 µs), and 11.5 against 2.2 µs with 32 concurrent streams: 5–10×, the
cancel scope alone about 6.5 µs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.types import Send

PING = b": ping\n\n"
PING_SECONDS = 15.0
_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


class EventStream(StreamingResponse):
    """A `text/event-stream` response of pre-framed events."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[bytes],
        background: BackgroundTask | None = None,
        ping_seconds: float = PING_SECONDS,
        ping: bytes = PING,
    ) -> None:
        super().__init__(events, headers=_HEADERS, background=background)
        self._ping_seconds = ping_seconds
        self._ping_event = ping
        self._last_sent = 0.0

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        self._last_sent = anyio.current_time()
        async with anyio.create_task_group() as pings:
            pings.start_soon(self._ping, send)
            async for event in self.body_iterator:
                self._last_sent = anyio.current_time()
                await send({"type": "http.response.body", "body": event, "more_body": True})
            pings.cancel_scope.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _ping(self, send: Send) -> None:
        while True:
            await anyio.sleep_until(self._last_sent + self._ping_seconds)
            if anyio.current_time() - self._last_sent >= self._ping_seconds:
                self._last_sent = anyio.current_time()
                await send({"type": "http.response.body", "body": self._ping_event, "more_body": True})
