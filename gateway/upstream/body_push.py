"""A streamed body handed to its reader as it arrives, in the connection's
own callback, instead of read by the request's task.

Read by the task, every piece of a paced stream wakes it: aiohttp's
reader stores the piece and sets a future, the loop schedules the task,
and the task climbs back down its awaits to the read. Pushed, the piece
goes from aiohttp's HTTP parser to `deliver`, which parses it and writes
what it makes to the client from a callback of the loop's: 13–17 % less
CPU per paced chunk (bench/README.md, "The pushed body").

`BodyPush.run` takes over a response's body until it ends. The pieces
that came with the headers go first; then what the connection receives
in one turn of the loop is delivered as one piece, at the end of the turn
(aiohttp's parser hands over one HTTP chunk at a time, and libuv reads a
busy socket up to 32 times a turn: delivered chunk by chunk, a burst cost
a third more), or at once past `DELIVER_AT_BYTES`. `deliver` returns
`None` when its client took what it wrote, or the `Future` of a write
the client has not taken yet: then the connection stops reading until it
is done (pieces the parser already had wait in order), so a slow client
holds the backend back instead of filling the gateway's memory. A
backend that sends nothing for `idle_seconds` (time spent waiting for a
slow client not counted) ends the run with `IdleExpired`; a connection
that breaks, with aiohttp's error. `stop()` says the reader has all it
wants (the stream's `[DONE]`): what follows is dropped, and the run ends
with the body, or after `drain_seconds`, so that the connection can go
back to the pool.

A body that aiohttp does not read (the demo backend's), and every body
when the fast paths are off (fast_paths.py), is read by a task of the
push's own (transport.py's `_Pieces`, over aiohttp's public `readany`) and
delivered the same way; while a write is held it reads nothing, and
aiohttp's own reader pauses the connection once its buffer is full.

aiohttp has no callback for a body's pieces, so the push takes the place
of its `StreamReader` for the run: the response's reader becomes a
`_PushedReader`, the same object with the methods the HTTP parser and the
connection call (`feed_data`, `feed_eof`, `set_exception`) delivering
instead of storing. The run restores it, so releasing or closing the
response works as aiohttp expects. aiohttp pauses its parser only when
asked from inside its callback, so the push pauses there, at every piece
that comes while a write is held (aiohttp resumes the connection itself
when the push takes its reader's buffer). Those are aiohttp's internals:
the take-over runs only where fast_paths.py found them at start-up, and
tests/gateway/test_body_push.py and test_held_writes.py hold both paths
to aiohttp's side of it, on uvloop.

The idle deadline is cheap enough to keep per piece: `asyncio.timeout`
around every read costs more than parsing what it brings, so one timer
per body watches instead (`IdleTimer`): the push marks when the
backend's silence starts and stops counting, and the timer acts only if
one silence has lasted `seconds`.
Time spent delivering what was read to a slow client never counts. The
body's push then ends with `IdleExpired`.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import aiohttp

from gateway.ops.overhead import BackendWait
from gateway.upstream import fast_paths

Deliver = Callable[[bytes], "asyncio.Future[None] | None"]

DELIVER_AT_BYTES = 128 << 10  # what one turn of the loop gathers before it is delivered (aiohttp's reader pauses there)
_PUSHES: dict[int, BodyPush] = {}  # by id of the aiohttp reader taken over


class _PushedReader(aiohttp.StreamReader):
    """An aiohttp reader whose pieces go to its `BodyPush`."""

    __slots__ = ()

    def feed_data(self, data: bytes, size: int = 0) -> bool:
        if data:
            _PUSHES[id(self)].received(data)
        return False  # nothing held back: the parser has no more to give for this piece

    # Chunk boundaries are kept for `readchunk`, which nobody calls here. The
    # parser calls these two for every HTTP chunk: a builtin that takes no
    # argument and does nothing costs no Python frame (bound already, it is
    # not bound again to the reader).
    begin_http_chunk_receiving = end_http_chunk_receiving = object.__init_subclass__

    def feed_eof(self) -> None:
        super().feed_eof()  # aiohttp's own end of body: the connection goes back to the pool
        push = _PUSHES.get(id(self))
        if push is not None:
            push.ended(None)

    def set_exception(self, exc: BaseException, *args: BaseException) -> None:
        super().set_exception(exc, *args)
        push = _PUSHES.get(id(self))
        if push is not None:
            push.ended(exc)


class BodyPush:
    """One body's pieces, delivered to `deliver` as they come."""

    __slots__ = (
        "_deliver",
        "_drain_seconds",
        "_loop",
        "_context",
        "_done",
        "_waiting",
        "_pending",
        "_pause",
        "_resume",
        "_stopped",
        "_paused",
        "_flush_due",
        "_waiting_bytes",
        "_end",
        "_idle",
        "_drain",
        "_wait",
    )

    def __init__(
        self, deliver: Deliver, idle_seconds: float, drain_seconds: float, wait: BackendWait | None = None
    ) -> None:
        self._deliver = deliver
        self._wait = wait  # the request's wait for its backend, from which `deliver`'s own time is taken
        self._drain_seconds = drain_seconds
        self._loop = asyncio.get_running_loop()
        # The request's context (its request id for the log), as a task would give it.
        self._context = contextvars.copy_context()
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._waiting: deque[bytes] = deque()  # pieces not delivered yet: this turn's, or a held write's
        self._waiting_bytes = 0
        self._pending: asyncio.Future[None] | None = None  # the client's write not taken yet
        self._pause: Callable[[], None] = _nothing
        self._resume: Callable[[], None] = _nothing
        self._stopped = False
        self._paused = False
        self._flush_due = False  # a delivery is due at the end of this turn of the loop
        self._end: tuple[BaseException | None] | None = None  # how the body ended, while deliveries wait
        self._idle = IdleTimer(idle_seconds, self._idle_expired, since=self._loop.time())
        self._drain: asyncio.TimerHandle | None = None

    async def run(self, content: aiohttp.StreamReader | None, pieces: AsyncIterator[bytes]) -> None:
        """Deliver the body (aiohttp's `content` taken over, with the fast
        paths on, or else `pieces` read by a task) until it ends; raises
        what ended it otherwise."""
        reader: asyncio.Task[None] | None = None
        try:
            if content is not None and fast_paths.ENABLED and type(content) is aiohttp.StreamReader:
                self._take_over(content)
            else:
                reader = self._loop.create_task(self._read(pieces))
            await self._done
        finally:
            self._idle.stop()
            if self._drain is not None:
                self._drain.cancel()
            if content is not None and _PUSHES.pop(id(content), None) is not None:  # taken over
                content.__class__ = aiohttp.StreamReader
            if reader is not None:
                reader.cancel()
            if self._pending is not None:
                self._pending.remove_done_callback(self._taken)

    def stop(self) -> None:
        """Deliver nothing more; the run ends with the body, or after `drain_seconds`."""
        if not self._stopped:
            self._stopped = True
            self._waiting.clear()
            self._waiting_bytes = 0
            self._idle.stop()
            self._drain = self._loop.call_later(self._drain_seconds, self.ended, None)

    def _take_over(self, content: aiohttp.StreamReader) -> None:
        connection = content._protocol  # the ResponseHandler that feeds it
        self._pause, self._resume = connection.pause_reading, connection.resume_reading
        _PUSHES[id(content)] = self
        content.__class__ = _PushedReader
        failure = content.exception()
        if failure is not None:  # what came before the connection broke still goes out (public reads drop it)
            came = content._read_nowait(-1)
        else:
            # Taking what came with the headers may resume a connection
            # aiohttp paused for it, and what it then reads comes here at
            # once: it waits behind what came first.
            self._pending = self._loop.create_future()
            came = content.read_nowait()
            self._pending = None
        if came:
            self._waiting.appendleft(came)
            self._waiting_bytes += len(came)
        if failure is not None:
            self._end = (failure,)
        elif content.is_eof():  # the whole body came before the push
            self._end = (None,)
        self._deliver_waiting()
        self._read_on()

    async def _read(self, pieces: AsyncIterator[bytes]) -> None:
        try:
            async for piece in pieces:
                self.received(piece)
                while self._pending is not None:
                    await asyncio.wait([self._pending])
        except Exception as error:
            self.ended(error)
        else:
            self.ended(None)

    def received(self, piece: bytes) -> None:
        """A piece of the body, from the connection's callback: delivered
        once the loop has run this turn's callbacks, with whatever else the
        connection brought meanwhile (aiohttp's parser hands over one HTTP
        chunk at a time, and a read of a busy stream holds dozens)."""
        if self._done.done() or self._stopped:
            return
        self._waiting.append(piece)
        self._waiting_bytes += len(piece)
        if self._pending is not None:
            # From inside the parser's callback, where aiohttp's parser can
            # stop; again for every piece, since aiohttp resumes the
            # connection itself when its own buffer drains (at the take-over).
            self._paused = True
            self._pause()
            return
        self._idle.since = self._loop.time()
        if self._waiting_bytes >= DELIVER_AT_BYTES:  # a busy connection: on with it now, and pause here if held
            self._deliver_waiting()
            if self._pending is not None:
                self._paused = True
                self._pause()
        elif not self._flush_due:
            self._flush_due = True
            self._loop.call_soon(self._deliver_waiting)

    def _taken(self, pending: asyncio.Future[None]) -> None:
        """The client took the pending write: on with what waited, then
        with reading."""
        self._pending = None
        if self._done.done():
            return
        failure = None if pending.cancelled() else pending.exception()
        if pending.cancelled() or failure is not None:
            self._finish(failure or asyncio.CancelledError())
            return
        self._idle.since = self._loop.time()
        self._deliver_waiting()
        self._read_on()

    def _read_on(self) -> None:
        """Resume the connection, if it was paused and no write is pending."""
        if self._pending is None and not self._done.done() and self._paused:
            self._paused = False
            self._resume()

    def _deliver_waiting(self) -> None:
        """The pieces not delivered yet, as one, then the end if it came
        (at the end of the loop's turn, and whenever a delivery may be due)."""
        self._flush_due = False
        if self._waiting and self._pending is None and not self._done.done():
            piece = b"".join(self._waiting)
            self._waiting.clear()
            self._waiting_bytes = 0
            wait = self._wait
            started = _clock() if wait is not None else 0.0
            try:
                pending = self._context.run(self._deliver, piece)
            except Exception as error:
                self._finish(error)
                return
            finally:
                if wait is not None:  # parsegate's work, not the backend's (ops/overhead.py)
                    wait.seconds -= _clock() - started
            if pending is not None and not self._stopped:
                self._pending = pending
                self._idle.since = None  # waiting for the client is not the backend's silence
                pending.add_done_callback(self._taken)
        if self._pending is None and not self._waiting and self._end is not None:
            self._finish(None if self._stopped else self._end[0])  # stopped by what it delivered: the stream is whole

    def ended(self, failure: BaseException | None) -> None:
        """The body ended (`failure`: why, if it broke); pieces still waiting
        (for this turn of the loop, or for a slow client) are delivered first.
        Once stopped the stream is whole: what breaks while it drains only
        costs the connection."""
        if self._stopped:
            failure = None
        if (self._pending is not None or self._waiting) and not self._stopped:
            self._end = (failure,)
        else:
            self._finish(failure)

    def _finish(self, failure: BaseException | None) -> None:
        if self._done.done():
            return
        if failure is None:
            self._done.set_result(None)
        else:
            self._done.set_exception(failure)

    def _idle_expired(self) -> None:
        self._finish(IdleExpired())


_clock = time.perf_counter


def _nothing() -> None:
    pass


class IdleExpired(Exception):
    """The backend sent nothing for the configured number of seconds."""


class IdleTimer:
    """Calls `expired` once the backend's silence, counted from `since` (the
    loop's time; `None` while it does not count), has lasted `seconds`. One
    timer, set again for the next time it may be due; `stop` it when done."""

    __slots__ = ("_loop", "_seconds", "_expired", "since", "_timer")

    def __init__(self, seconds: float, expired: Callable[[], None], since: float | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._seconds = seconds
        self._expired = expired
        self.since = since
        self._timer = self._loop.call_later(seconds, self._check)

    def _check(self) -> None:
        now = self._loop.time()
        if self.since is not None and now - self.since >= self._seconds:
            self._expired()
            return
        start = now if self.since is None else self.since
        self._timer = self._loop.call_at(start + self._seconds, self._check)

    def stop(self) -> None:
        self._timer.cancel()
