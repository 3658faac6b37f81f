"""Background responses (docs/state.md#background-responses), as OpenAI's
API runs them (https://platform.openai.com/docs/guides/background):
`background: true` on `POST /v1/responses` stores the response at once,
`queued`, and answers it (or, with `stream: true`, streams its events),
while the generation runs in a task the app owns, not the client's
connection: a client that leaves stops nothing. The run stores the
response `in_progress`, then at its end as any stored response is stored
(`completed`, `incomplete`, `failed`); `GET /v1/responses/{id}` polls it.
`POST /v1/responses/{id}/cancel` stops the run (its backend request is
closed) and stores it `cancelled`, with what was written so far; sent to
another gateway sharing the store, it marks the response `cancelled`, which
the run reads within `CANCEL_POLL_SECONDS`, and stops.

The run is always a streamed turn, so that what it wrote is there when it
is stopped, and its events are kept in memory (`EventLog`) on the gateway
that runs it, while it runs and for the last `KEPT_FINISHED` finished:
`GET /v1/responses/{id}?stream=true&starting_after=N` streams them
from the one after sequence number N. At most `server.max_background_responses`
run at once (429 past it); shutting down stops them, each stored `failed`
(`server_shutdown`). A run holds its API key's lease (api/key_limits.py):
it counts as a request in flight, and its tokens count, until it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, fields
from functools import partial
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.responses import Response

from gateway.api.key_limits import KeyLease, take_lease
from gateway.api.responses_state import STORE_UNAVAILABLE, ResponseState, store_of
from gateway.api.sse import EventStream
from gateway.api.turns import Turn, TurnStream
from gateway.ops.errors import ApiError
from gateway.ops.json_body import json_response
from gateway.ops.store import StoredResponse, StoreUnavailable

if TYPE_CHECKING:  # responses.py starts the runs
    from gateway.api.responses import EventWriter, ResponseEvents

log = logging.getLogger("parsegate.background")
RUNNING = ("queued", "in_progress")
KEPT_FINISHED = 16  # the finished runs whose events are kept, newest first, for a stream resumed late
CANCEL_POLL_SECONDS = 1.0  # how often a run reads its response, to see a cancel sent to another gateway
RETRY_AFTER_SECONDS = 1
# responses.produce_events: relays a turn's stream as a response's events, and stores it before the last
Produce = Callable[[TurnStream, "ResponseEvents", ResponseState, "EventWriter"], Awaitable[dict]]


class EventLog:
    """The framed events of one background response, in order: the one at
    index N has sequence_number N. Written by its run; followed by any
    number of streams, each from where it asks."""

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.ended = False
        self._more = asyncio.Event()

    def write(self, events: list[bytes]) -> None:
        self.events += events
        self._wake()

    async def send(self, events: list[bytes]) -> None:
        self.write(events)

    def end(self) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        self._more.set()
        self._more = asyncio.Event()

    async def follow(self, after: int, out: EventStream) -> None:
        """Send the events after sequence number `after` to `out`, as they come, until the log ends."""
        cursor = after + 1
        while True:
            more = self._more
            if cursor < len(self.events):
                batch, cursor = self.events[cursor:], len(self.events)
                await out.send(b"".join(batch))
            elif self.ended:
                return
            else:
                await more.wait()


@dataclass
class BackgroundState(ResponseState):
    """A background response's state: `ResponseState`, which also writes
    the response as it goes (`keep`), and takes the output of a run that
    is stopped (`save_later`) for the run to store as it stops."""

    cut: dict | None = None

    @classmethod
    def of(cls, state: ResponseState) -> BackgroundState:
        return cls(**{field.name: getattr(state, field.name) for field in fields(ResponseState)})

    async def keep(self, response: dict) -> bool:
        """Write the response alone (queued, in progress, stopped); whether it was written."""
        try:
            await self.store.save_response(self.owner, StoredResponse(response, self.input), self.continues)
        except StoreUnavailable as error:
            log.error("background response %s could not be stored: %s", response["id"], error)
            return False
        return True

    def save_later(self, response: dict) -> None:
        self.cut = response

    async def save(self, response: dict) -> dict:
        """`ResponseState.save`, unless the response was cancelled meanwhile
        through another gateway sharing the store: then the cancelled one."""
        try:
            found = await self.store.response(self.owner, response["id"])
        except StoreUnavailable:
            found = None
        if found is not None and found.response["status"] == "cancelled":
            return found.response
        return await super().save(response)


class BackgroundRun:
    """One background response's run: its task, its events, and why it was stopped."""

    __slots__ = ("log", "task", "shutdown", "answered")

    def __init__(self) -> None:
        self.log = EventLog()
        self.task: asyncio.Task[None] | None = None
        self.shutdown = False
        self.answered = False  # its last event is written


class BackgroundRuns:
    """The app's background responses: those running, by id, and the
    events of the last ones finished."""

    def __init__(self) -> None:
        self._running: dict[str, BackgroundRun] = {}
        self._finished: OrderedDict[str, EventLog] = OrderedDict()

    def reserve(self, response_id: str, most: int) -> BackgroundRun:
        """A place for one run more; the 429 when `most` are running."""
        if len(self._running) >= most:
            message = (
                f"more than {most} background responses are running (server.max_background_responses); retry later"
            )
            raise ApiError(429, message, code="too_many_requests", headers={"retry-after": str(RETRY_AFTER_SECONDS)})
        run = self._running[response_id] = BackgroundRun()
        return run

    def release(self, response_id: str) -> None:
        """Give back a place reserved for a run that never started."""
        self._running.pop(response_id, None)

    def start(self, response_id: str, work: Callable[[BackgroundRun], Coroutine[object, object, None]]) -> None:
        run = self._running[response_id]
        run.task = asyncio.get_running_loop().create_task(work(run))
        run.task.add_done_callback(partial(self._done, response_id))

    def _done(self, response_id: str, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("background response %s failed: %r", response_id, task.exception())
        run = self._running.pop(response_id)
        run.log.end()  # a run cancelled before it started never ended its log
        self._finished[response_id] = run.log
        while len(self._finished) > KEPT_FINISHED:
            self._finished.popitem(last=False)

    def events(self, response_id: str) -> EventLog | None:
        """The events of a response running here, or among the last finished here."""
        run = self._running.get(response_id)
        return run.log if run is not None else self._finished.get(response_id)

    async def cancel(self, response_id: str) -> bool:
        """Stop the run, and wait until it has stored its response; whether it was running here."""
        run = self._running.get(response_id)
        if run is None or run.task is None:
            return False
        run.task.cancel()
        await asyncio.wait([run.task])
        return True

    async def close(self) -> None:
        """Stop every run (each stores its response `failed`), and wait for them."""
        tasks = []
        for run in self._running.values():
            if run.task is not None:
                run.shutdown = True
                run.task.cancel()
                tasks.append(run.task)
        if tasks:
            await asyncio.wait(tasks)


async def generate(
    produce: Produce,
    turn: Turn,
    events: ResponseEvents,
    state: BackgroundState,
    lease: KeyLease | None,
    run: BackgroundRun,
) -> None:
    """Run the turn, its events written to the run's log and its response
    stored as it goes; a response stopped before its end is stored with
    what it wrote. Its key's `lease` (its request's, taken over) ends with it."""
    response_object = events.response_object
    generation = asyncio.current_task()
    assert generation is not None, "a run is a task"
    watch = asyncio.get_running_loop().create_task(_cancelled_elsewhere(state, response_object.id, generation))
    try:
        await _answer(produce, turn, events, state, run)
    except asyncio.CancelledError:
        if not run.answered:  # stopped before its last event
            cut = state.cut if state.cut is not None else events.interrupted(None, frozenset())
            stopped = response_object.stopped(cut, run.shutdown)
            await state.keep(stopped)
            run.log.write([events.final(stopped)])
        raise
    finally:
        watch.cancel()
        try:
            if lease is not None:
                await lease.end(turn.record)  # its tokens counted, its slot given back
        finally:
            run.log.end()


async def _answer(
    produce: Produce, turn: Turn, events: ResponseEvents, state: BackgroundState, run: BackgroundRun
) -> None:
    """The turn's events written to the run's log, its response stored in
    progress, then before its last event (then `answered`)."""
    await state.keep(events.response_object.in_progress())
    try:
        stream = await turn.stream()
    except ApiError as error:  # the backend refused or could not be reached
        run.log.write(events.opening())
        failed = events.failed(error.body, None)
        await state.keep(failed)
        run.log.write([events.final(failed)])
        run.answered = True
        return
    try:
        response = await produce(stream, events, state, run.log)
    finally:
        await stream.release()
    run.answered = True
    if response["status"] == "failed":  # a failure to store it in a conversation is stored as its answer
        await state.keep(response)


async def _cancelled_elsewhere(state: BackgroundState, response_id: str, generation: asyncio.Task) -> None:
    """Cancel `generation` once its stored response reads `cancelled`: a
    cancel sent to another gateway sharing the store (or another worker)."""
    while True:
        await asyncio.sleep(CANCEL_POLL_SECONDS)
        try:
            found = await state.store.response(state.owner, response_id)
        except StoreUnavailable:
            continue
        if found is not None and found.response["status"] == "cancelled":
            generation.cancel()
            return


def background_state(request: Request, state: ResponseState | None) -> ResponseState:
    """The state a background request has, stored (the 400 naming
    `background` with `store.backend: none`, as `store: true` is)."""
    if state is None:
        store_of(request, "background")
        raise AssertionError("with a store, a request that keeps its response has a state")
    return state


async def start_background(
    request: Request, produce: Produce, turn: Turn, events: ResponseEvents, state: ResponseState, stream: bool
) -> Response:
    """Store the response `queued` and start its run: the queued response,
    or (`stream`) the stream of its events, which the run goes on without."""
    response_object = events.response_object
    runs: BackgroundRuns = request.app.state.background
    run = runs.reserve(response_object.id, request.app.state.config.server.max_background_responses)
    kept = BackgroundState.of(state)
    queued = response_object.queued()
    written = False
    try:
        written = await kept.keep(queued)
    finally:
        if not written:
            runs.release(response_object.id)
    if not written:
        raise ApiError(503, STORE_UNAVAILABLE, type="server_error", code="store_unavailable")
    events.queued = True
    runs.start(response_object.id, partial(generate, produce, turn, events, kept, take_lease(request)))
    if stream:
        return EventStream(partial(run.log.follow, -1))
    return json_response(queued)
