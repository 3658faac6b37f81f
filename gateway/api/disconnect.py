"""A client that leaves before the response starts: while the handler waits
for the backend's first byte, the client's side of the connection is
watched, and its disconnect cancels the wait (and so the upstream request)
at once, instead of at the first-byte timeout.

Once the response has started, starlette's streaming response watches for
the disconnect itself.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio
from starlette.requests import Request

from gateway.ops.errors import ApiError

CLIENT_CLOSED = 499  # nginx's status for a client that closed the request; nobody receives it

_Result = TypeVar("_Result")


async def unless_client_leaves(request: Request, waiting: Awaitable[_Result]) -> _Result:
    """`waiting`'s result; cancelled, with a 499, if the client disconnects
    first. Call it only once the request body has been read."""
    left = False

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal left
        while (await request.receive())["type"] != "http.disconnect":
            pass
        left = True
        scope.cancel()

    failure: Exception | None = None
    async with anyio.create_task_group() as group:  # an error inside would come out wrapped in a group
        group.start_soon(watch, group.cancel_scope)
        try:
            result = await waiting
        except Exception as error:  # raised again below, as it is
            failure = error
        group.cancel_scope.cancel()
    if left:
        raise ApiError(CLIENT_CLOSED, "the client closed the request", code="client_closed_request")
    if failure is not None:
        raise failure
    return result
