"""Server-sent events out, on the hot path: the one place where the
gateway frames events, and `EventStream`, the response that sends them.

Framing (https://html.spec.whatwg.org/multipage/server-sent-events.html):
chat completions send `data: JSON` and end with `data: [DONE]`
(`data_event`, `DONE`); the Responses API and Anthropic Messages name each
event, `event: NAME` then `data: JSON` (`named_event`). Each event ends
with a blank line. Events sent per token are framed from an `Envelope`,
the event's bytes around its one varying value, encoded once per block and
concatenated per delta (`head + orjson.dumps(value) + tail`).

`EventStream` sends the framed events as they are, a starlette
`StreamingResponse` that stops the stream when the client disconnects:
sse-starlette's EventSourceResponse would open a cancel scope per event
for its per-send timeout, the largest per-chunk cost it adds. It sends the
headers an event stream needs and, like sse-starlette, a comment line
whenever the stream has been quiet for `ping_seconds` (counted from the
last thing sent, so never more than that apart), so that proxies keep it
open (or the surface's own keep-alive event: Anthropic's `ping`). However
the stream ends (a client that left included) its events are closed before
the response returns, so that what they record (the usage) is in the
request's log line. Per stream that takes one task (the disconnect watch)
and one timer (the keep-alive), and nothing per event but reading the
loop's clock: starlette's own watch and a ping task would take two anyio
task groups and two tasks more per request (deadline.py).

Measured (`python -m bench.sse_library_bench`, bench/README.md "Card
libraries"): sending the same event in-process, sse-starlette 3.7.0 costs
8.1 µs per event against 0.8 µs here for one stream (a bare `send` loop:
1.0 µs), and 11.5 against 2.2 µs with 32 concurrent streams: 5–10×, the
cancel scope alone about 6.5 µs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import orjson
from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.api.disconnect import DisconnectWatch
from gateway.ops.deadline import Deadline

DATA = b"data: "
END = b"\n\n"
DONE = b"data: [DONE]\n\n"
PING = b": ping\n\n"
PING_SECONDS = 15.0
CLOSE_SECONDS = 5.0  # at most this long to close the events of a stream that ended early
_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def data_event(payload: dict) -> bytes:
    """An unnamed event (chat completions, their errors)."""
    return DATA + orjson.dumps(payload) + END


def relayed_event(payload: bytes) -> bytes:
    """A backend's event payload, framed again whole."""
    return DATA + payload + END


def _head(name: str | None) -> bytes:
    return DATA if name is None else b"event: " + name.encode() + b"\n" + DATA


def named_event(name: str, payload: dict) -> bytes:
    """An event with its `event:` line (Responses, Messages)."""
    return _head(name) + orjson.dumps(payload) + END


class Envelope:
    """The framing of an event whose payload varies in one value, its last:
    `payload`'s innermost last value (the last key's, nested through its
    last dicts and lists) is `None` and stands for it. An event is
    `head + orjson.dumps(value) + tail`; `after` goes right after the
    value (the Responses API's `,"sequence_number":%d`, filled in with `%`)."""

    __slots__ = ("head", "tail")

    def __init__(self, name: str | None, payload: dict, after: bytes = b"") -> None:
        encoded = orjson.dumps(payload)
        closers = len(encoded) - len(encoded.rstrip(b"]}"))
        hole = len(encoded) - closers - len(b"null")
        assert encoded[hole : hole + 4] == b"null", "the payload's last value is its hole"
        self.head = _head(name) + encoded[:hole]
        self.tail = after + encoded[hole + 4 :] + END


class EventStream(StreamingResponse):
    """A `text/event-stream` response of framed events."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncGenerator[bytes],
        background: BackgroundTask | None = None,
        ping_seconds: float = PING_SECONDS,
        ping: bytes = PING,
    ) -> None:
        super().__init__(events, headers=_HEADERS, background=background)
        self._events = events
        self._ping_seconds = ping_seconds
        self._ping_event = ping
        self._last_sent = 0.0
        self._quiet_timer: asyncio.TimerHandle | None = None
        self._pinging: asyncio.Future[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the events until they end or the client leaves (a
        `DisconnectWatch` cancels the stream), then run the background task.
        Starlette's own watch takes a task group and a task more per request."""
        watch = DisconnectWatch(receive)
        try:
            await self._stream(send, watch)
        except asyncio.CancelledError:
            if not watch.cut_alone():
                raise
        finally:
            watch.stop()
        if self.background is not None:
            await self.background()

    async def _stream(self, send: Send, watch: DisconnectWatch) -> None:
        # The loop's own clock, as its timers read it, at a twentieth of
        # anyio.current_time()'s cost per event (docs/benchmarks.md, "Server side").
        loop = asyncio.get_running_loop()
        clock = loop.time
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            self._last_sent = clock()
            self._quiet_timer = loop.call_at(self._last_sent + self._ping_seconds, self._when_quiet, send)
            async for event in self._events:
                self._last_sent = clock()
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await self._stop_pings()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:  # a client that left cancels this while the events wait at a `yield`
            watch.hold()  # the events close whole, whoever leaves now
            try:
                await self._stop_pings()
            finally:
                with Deadline(CLOSE_SECONDS, move_on=True):
                    await self._events.aclose()

    def _when_quiet(self, send: Send) -> None:
        """The keep-alive timer: sends the ping once the stream has been
        quiet for `ping_seconds`, and sets itself for the next time it may
        be due (so one timer per stream, and nothing per event)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        due = self._last_sent + self._ping_seconds
        if now >= due:
            if self._pinging is None or _sent(self._pinging):  # not while a ping waits for a slow client
                self._last_sent = now
                ping = {"type": "http.response.body", "body": self._ping_event, "more_body": True}
                self._pinging = asyncio.ensure_future(send(ping))
            due = now + self._ping_seconds
        self._quiet_timer = loop.call_at(due, self._when_quiet, send)

    async def _stop_pings(self) -> None:
        """No ping after this; one being sent is cancelled (its failure, if
        it failed, raised here)."""
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        pinging, self._pinging = self._pinging, None
        if pinging is not None:
            pinging.cancel()
            await asyncio.wait([pinging])
            failure = None if pinging.cancelled() else pinging.exception()
            if failure is not None:
                raise failure


def _sent(ping: asyncio.Future[None]) -> bool:
    """Whether `ping` went out; one that failed stays, its failure raised at
    the end of the stream (`_stop_pings`), and no ping follows it."""
    return ping.done() and (ping.cancelled() or ping.exception() is None)
