"""A client that leaves before the response starts: while the handler waits
for the backend's first byte, the client's side of the connection is
watched, and its disconnect cancels the wait (and so the upstream request)
at once, instead of at the first-byte timeout.

Once the response has started, the event stream (sse.py) watches for the
disconnect itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

from gateway.ops.deadline import cancels_asked, only_canceller
from gateway.ops.errors import ApiError

CLIENT_CLOSED = 499  # nginx's status for a client that closed the request; nobody receives it

_Result = TypeVar("_Result")


async def unless_client_leaves(request: Request, waiting: Awaitable[_Result]) -> _Result:
    """`waiting`'s result; cancelled, with a 499, if the client disconnects
    first. Call it only once the request body has been read. The watch is
    one plain task, not an anyio task group (deadline.py says why)."""
    task = asyncio.current_task()
    assert task is not None, "called by the request's task"
    before = cancels_asked(task)
    left = False

    async def watch() -> None:
        nonlocal left
        while (await request.receive())["type"] != "http.disconnect":
            pass
        left = True
        task.cancel()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        result = await waiting
    except BaseException:  # a cancellation, or what the wait made of it
        if left and only_canceller(task, before):
            raise _client_left() from None
        raise
    finally:
        watcher.cancel()
        if watcher.done() and not watcher.cancelled():
            watcher.result()  # the watch's own failure (receive raised), if it failed
    if left:  # what it waited for ended all the same
        only_canceller(task, before)
        raise _client_left()
    return result


def _client_left() -> ApiError:
    return ApiError(CLIENT_CLOSED, "the client closed the request", code="client_closed_request")
