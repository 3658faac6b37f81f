"""A client that leaves: `DisconnectWatch`, one task that waits for the
client's `http.disconnect` and cancels the request's task when it comes
(a plain task, not an anyio task group, whose cancel scopes cost several
times a timer's: docs/benchmarks.md, "Server side"). Whether a
cancellation was the watch's own is told as `asyncio.timeout` tells it,
by the task's count of cancel requests (`Task.cancelling` and
`Task.uncancel`): a cancellation somebody else asked for as well goes
through as a cancellation.

While the handler waits for the backend's first byte
(`unless_client_leaves`), a disconnect cancels the wait (and so the
upstream request) at once, instead of at the first-byte timeout; once the
response has started, the event stream (sse.py) watches the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request
from starlette.types import Receive

from gateway.ops.errors import ApiError

CLIENT_CLOSED = 499  # nginx's status for a client that closed the request; nobody receives it

_Result = TypeVar("_Result")


class DisconnectWatch:
    """Watches `receive` for the calling task: when `http.disconnect` comes
    (uvicorn also answers it once a response is complete), the task is
    cancelled and `cut` set, unless `hold` was called first. `stop` ends
    the watch, raising its own failure if `receive` raised."""

    __slots__ = ("_task", "_before", "_held", "_watcher", "cut")

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None, "a watch is set by the request's task"
        self._task = task
        self._before = task.cancelling()
        self._held = False
        self.cut = False
        self._watcher = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._held and self._task.cancelling() == self._before:  # not once somebody else cancelled it
            self.cut = True
            self._task.cancel()

    def hold(self) -> None:
        """From now on a disconnect cancels nothing."""
        self._held = True

    def cut_alone(self) -> bool:
        """Called as the task's cancellation (or what it became) is caught:
        whether the watch's cut was its only cause (then it is withdrawn,
        and the catcher may swallow it)."""
        return self.cut and self._task.uncancel() <= self._before  # withdrawn either way, as asyncio.timeout does

    def stop(self) -> None:
        self._watcher.cancel()
        if self._watcher.done() and not self._watcher.cancelled():
            self._watcher.result()  # the watch's own failure (receive raised), if it failed


async def unless_client_leaves(request: Request, waiting: Awaitable[_Result]) -> _Result:
    """`waiting`'s result; cancelled, with a 499, if the client disconnects
    first. Call it only once the request body has been read."""
    watch = DisconnectWatch(request.receive)
    try:
        result = await waiting
    except BaseException:  # a cancellation, or what the wait made of it
        if watch.cut_alone():
            raise _client_left() from None
        raise
    finally:
        watch.stop()
    if watch.cut:  # what it waited for ended all the same
        watch.cut_alone()
        raise _client_left()
    return result


def _client_left() -> ApiError:
    return ApiError(CLIENT_CLOSED, "the client closed the request", code="client_closed_request")
