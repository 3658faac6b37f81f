"""Server-sent events out, on the hot path: `EventStream`, the response
that sends the events framed by sse_frames.py.

`EventStream` sends the framed events its producer writes: a coroutine
given the stream, which sends the opening and closing events with `send`
from the request's task, and writes the events of the backend's body with
`write`, from a callback of the loop's as the body arrives
(upstream/body_push.py). `write` steps the ASGI `send` there and then, as a
task would step it, so that a paced chunk wakes no task: when the
client's flow control holds the send, `write` returns its future, and the
push stops reading the backend until it is done. Stepping a coroutine
uses asyncio's internals (a future's `_asyncio_future_blocking`), so it
runs only with the fast paths on (upstream/fast_paths.py) and a `send`
that is a coroutine function; otherwise `write` awaits the `send` in a
task, an ordinary send, and returns the future of that. The events between the
response's start and its end go to the server's own `send` when the app
hands it over in the scope (`SERVER_SEND`, app.py's `Gateway`): the
middlewares watch only the start and the end, and a coroutine each per
event cost 3 % of a paced chunk (bench/README.md, "The server's send,
and shorter parses"); on uvicorn's httptools server an event goes past
that `send` too, straight to the connection, while the send would do
nothing else (server_write.py). A write that waits for the client for
`server.send_timeout` cuts the stream (`ClientStalled`). Stepped outside
a task, any ASGI middleware's `send` it does go through must be plain
async code, as parsegate's are (observe.py, limits.py): one
that opens an anyio cancel scope or asks for the current task
(starlette's `BaseHTTPMiddleware`) would not work there. sse-starlette's
EventSourceResponse would open a cancel scope per event for its per-send
timeout, the largest per-chunk cost it adds. It sends the headers an
event stream needs and, like sse-starlette, a comment line whenever the
stream has been quiet for `ping_seconds` (counted from the last thing
sent, so never more than that apart), so that proxies keep it open (or
the surface's own keep-alive event: Anthropic's `ping`). However the
stream ends (a client that left included) the producer's own cleanup
runs whole before the response returns, so that what it records (the
usage) is in the request's log line. Per stream that takes one task (the
disconnect watch) and one timer (the keep-alive), and nothing per event
but reading the loop's clock.

Measured (`python -m bench.sse_library_bench`, bench/README.md "Card
libraries"): sending the same event in-process, sse-starlette 3.7.0 costs
8.1 µs per event against 0.8 µs here for one stream (a bare `send` loop:
1.0 µs), and 11.5 against 2.2 µs with 32 concurrent streams: 5–10×, the
cancel scope alone about 6.5 µs.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

from starlette.background import BackgroundTask
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from gateway.api.disconnect import DisconnectWatch
from gateway.api.server_write import http_chunk, server_cycle, writes_now
from gateway.api.sse_frames import PING
from gateway.ops import server_config
from gateway.ops.logs import left_unfinished
from gateway.ops.observe import request_id
from gateway.upstream import fast_paths

log = logging.getLogger("parsegate.stream")

SERVER_SEND = "parsegate.server_send"  # scope key: the ASGI server's own `send` (app.py, `Gateway`)
SEND_TIMEOUT = "parsegate.send_timeout"  # scope key: `server.send_timeout` (app.py, `Gateway`)
PING_SECONDS = 15.0
_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


Produce = Callable[["EventStream"], Awaitable[None]]


class ClientStalled(Exception):
    """A write waited for the client for the send timeout: it is connected
    and reads nothing, or too little to free the server's write buffer."""


class EventStream(Response):
    """A `text/event-stream` response whose events `produce` writes: with
    `send` from its own task, or with `write` from a callback (the
    backend's body pushed as it arrives, upstream/body_push.py)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        produce: Produce,
        background: BackgroundTask | None = None,
        ping_seconds: float = PING_SECONDS,
        ping: bytes = PING,
    ) -> None:
        self.status_code = 200
        self.background = background
        self.init_headers(_HEADERS)
        self._produce = produce
        self._ping_seconds = ping_seconds
        self._ping_event = ping
        self._asgi_send: Send = _not_started  # through the middlewares: the start and the end
        self._body_send: Send = _not_started  # the events between them
        self._watch: DisconnectWatch | None = None
        self._context = contextvars.Context()
        self._last_sent = 0.0
        self._now: Callable[[], float] = time.monotonic
        self._quiet_timer: asyncio.TimerHandle | None = None
        self._pinging: asyncio.Future[None] | None = None
        self._held: asyncio.Future[None] | None = None  # a `write` the client's flow control holds
        self._held_send: Coroutine[Any, Any, None] | None = None  # a stepped send the client holds
        self._sender: asyncio.Task[None] | None = None  # without the fast paths: the task that sends
        self._stepped = False  # whether `write` steps the send (the fast paths) or sends in a task
        self._queued: list[bytes] = []  # written while a send is held
        self._send_seconds = server_config.SEND_TIMEOUT  # how long a send may be held before the stream is cut
        self._stall_timer: asyncio.TimerHandle | None = None
        self._cut: ClientStalled | None = None  # once the stream is cut, nothing more is sent
        self._cycle: Any = None  # uvicorn's cycle, when events are written to its connection (server_write.py)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the events until they end or the client leaves (a
        `DisconnectWatch` cancels the stream), then run the background task.
        Starlette's own watch takes a task group and a task more per request.
        A write that waits for the client for the send timeout cuts the
        stream: the response ends unfinished, and the server closes the
        connection once the client has taken what its buffers hold."""
        watch = self._watch = DisconnectWatch(receive)
        self._asgi_send = send
        self._body_send = scope.get(SERVER_SEND, send)
        self._send_seconds = scope.get(SEND_TIMEOUT, server_config.SEND_TIMEOUT)
        self._context = contextvars.copy_context()
        self._stepped = fast_paths.ENABLED and inspect.iscoroutinefunction(self._body_send)
        try:
            await self._stream()
        except asyncio.CancelledError:
            if not watch.cut_alone():
                raise
        except ClientStalled:
            message = "a write to the client stayed blocked for %g s: the stream is cut"
            log.warning(message, self._send_seconds, extra={"request_id": request_id.get()})
            left_unfinished.set(True)
            record = scope.get("state", {}).get("record")  # observe.py's, for the access line and the metrics
            if record is not None:
                record.stream_cut("client_stalled")
        finally:
            watch.stop()
        if self.background is not None:
            await self.background()

    async def _stream(self) -> None:
        # The loop's own clock, as its timers read it, at a twentieth of
        # anyio.current_time()'s cost per event (docs/benchmarks.md, "Server side").
        loop = asyncio.get_running_loop()
        send = self._asgi_send
        self._now = loop.time
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            self._cycle = server_cycle(self._body_send) if self._stepped else None
            self._last_sent = loop.time()
            self._quiet_timer = loop.call_at(self._last_sent + self._ping_seconds, self._when_quiet)
            await self._produce(self)
            await self._settled()
            await self._stop_pings()
            await self._within_send_timeout(send({"type": "http.response.body", "body": b"", "more_body": False}))
        finally:
            self._hold()
            self._stop_stall_timer()
            if self._held_send is not None:  # the client left with a write held
                self._held_send.close()
                self._held_send = None
            if self._held is not None:
                self._held.cancel()
                self._held = None
            self._queued.clear()
            sender, self._sender = self._sender, None
            if sender is not None:
                sender.cancel()
                await asyncio.wait([sender])
            await self._stop_pings()

    def write(self, event: bytes) -> asyncio.Future[None] | None:
        """Send `event` at once (any callback may): `None` once it is sent,
        or the future of a send the client's flow control holds (what is
        written meanwhile goes after it, in order, and the future is done
        once all of it is sent). The ASGI `send` is stepped here as a task
        would step it, without waking one (bench/README.md, "The pushed
        body"). Once the stream is cut (`ClientStalled`), raises that."""
        if self._cut is not None:
            raise self._cut
        self._last_sent = self._now()
        if self._held is not None:  # it goes once the held send is done, in order
            self._queued.append(event)
            return self._held
        if not self._stepped:
            return self._send_in_task(event)
        cycle = self._cycle
        if cycle is not None and writes_now(cycle):  # straight to the connection (server_write.py)
            cycle.transport.write(http_chunk(event))
            return None
        sending = self._body_send({"type": "http.response.body", "body": event, "more_body": True})
        try:
            waits_for = sending.send(None)  # type: ignore[attr-defined]
        except StopIteration:
            return None
        except BaseException:
            self._hold()
            raise
        self._held = asyncio.get_running_loop().create_future()
        self._holding(sending)  # type: ignore[arg-type]
        self._resume_when(waits_for)
        return self._held

    def _send_in_task(self, event: bytes) -> asyncio.Future[None]:
        """`write` without the fast paths: `event`, and what is written
        meanwhile, awaited by a task (in the stream's context), each send
        within the send timeout; the future is done once all is sent."""
        loop = asyncio.get_running_loop()
        held = self._held = loop.create_future()
        self._sender = self._context.run(loop.create_task, self._sending(event, held))
        return held

    async def _sending(self, event: bytes, held: asyncio.Future[None]) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                self._stop_stall_timer()
                self._stall_timer = loop.call_later(self._send_seconds, self._stalled)
                await self._body_send({"type": "http.response.body", "body": event, "more_body": True})
                if not self._queued or self._held is not held:
                    break
                event = b"".join(self._queued)  # what was written meanwhile, as one send
                self._queued.clear()
        except BaseException as error:
            if self._held is not held:  # the stream was cut, or ended: cancelled by it
                return
            self._stop_stall_timer()
            self._held = self._sender = None
            self._queued.clear()
            self._hold()
            if isinstance(error, asyncio.CancelledError):
                held.cancel()
            else:
                held.set_exception(error)
            return
        if self._held is held:
            self._stop_stall_timer()
            self._held = self._sender = None
            held.set_result(None)

    async def send(self, event: bytes) -> None:
        """Send `event` from the stream's task (after any held `write`)."""
        await self._settled()
        self.write(event)
        await self._settled()

    async def _within_send_timeout(self, sending: Awaitable[None]) -> None:
        timer = asyncio.timeout(self._send_seconds)
        try:
            async with timer:
                await sending
        except TimeoutError:
            if timer.expired():
                raise ClientStalled from None
            raise

    async def _settled(self) -> None:
        held = self._held
        if held is not None:
            await asyncio.wait([held])
            held.result()
        if self._cut is not None:
            raise self._cut

    def _resume_when(self, waits_for: object) -> None:
        """Go on with the held send when what it waits for is done, as an
        asyncio task would (a bare `yield` waits for the loop's next turn)."""
        if waits_for is None:
            asyncio.get_running_loop().call_soon(self._resume_held, context=self._context)
            return
        future = cast("asyncio.Future[object]", waits_for)
        future._asyncio_future_blocking = False  # taken, as a task takes it
        future.add_done_callback(lambda _: self._resume_held(), context=self._context)

    def _resume_held(self) -> None:
        sending, held = self._held_send, self._held
        if sending is None or held is None:
            return  # the stream ended meanwhile
        try:
            waits_for = sending.send(None)
        except StopIteration:
            if self._queued:  # what was written meanwhile, as one send
                event = b"".join(self._queued)
                self._queued.clear()
                message = {"type": "http.response.body", "body": event, "more_body": True}
                self._holding(cast("Coroutine[Any, Any, None]", self._body_send(message)))
                self._resume_when(None)
                return
            self._stop_stall_timer()
            self._held = self._held_send = None
            held.set_result(None)
        except BaseException as error:
            self._stop_stall_timer()
            self._held = self._held_send = None
            self._queued.clear()
            self._hold()
            held.set_exception(error)
        else:
            self._resume_when(waits_for)

    def _holding(self, sending: Coroutine[Any, Any, None]) -> None:
        """`sending` waits for the client: if it still waits after the send
        timeout, the stream is cut (`_stalled`)."""
        self._held_send = sending
        self._stop_stall_timer()
        self._stall_timer = asyncio.get_running_loop().call_later(self._send_seconds, self._stalled)

    def _stalled(self) -> None:
        """The held send waited for the client for the send timeout:
        the send is dropped and the stream cut for good (`ClientStalled`,
        raised to its producer and its task by every later `write`,
        `send` or wait for the held one)."""
        sending, held = self._held_send, self._held
        self._stall_timer = self._held_send = self._held = None
        cut = self._cut = ClientStalled()
        self._queued.clear()
        self._hold()
        if held is not None:
            held.set_exception(cut)
            held.exception()  # taken here: whoever waits for it gets the cut all the same
        if sending is not None:
            sending.close()
        if self._sender is not None:  # awaited as the stream ends
            self._sender.cancel()

    def _stop_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _hold(self) -> None:
        """The stream is ending, its events closing: no disconnect cuts that."""
        if self._watch is not None:
            self._watch.hold()

    def _when_quiet(self) -> None:
        """The keep-alive timer: sends the ping once the stream has been
        quiet for `ping_seconds`, and sets itself for the next time it may
        be due (so one timer per stream, and nothing per event)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        due = self._last_sent + self._ping_seconds
        if now >= due:
            # not while a ping or a write waits for a slow client
            if (self._pinging is None or _sent(self._pinging)) and self._held is None:
                self._last_sent = now
                ping = {"type": "http.response.body", "body": self._ping_event, "more_body": True}
                self._pinging = asyncio.ensure_future(self._body_send(ping))
            due = now + self._ping_seconds
        self._quiet_timer = loop.call_at(due, self._when_quiet)

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


async def _not_started(message: Message) -> None:
    raise RuntimeError("the event stream has not started")


def _sent(ping: asyncio.Future[None]) -> bool:
    """Whether `ping` went out; one that failed stays, its failure raised at
    the end of the stream (`_stop_pings`), and no ping follows it."""
    return ping.done() and (ping.cancelled() or ping.exception() is None)
