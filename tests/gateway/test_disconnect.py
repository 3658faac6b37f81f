"""The wait for a response watched for the client leaving
(gateway/api/disconnect.py), at the level of its ASGI messages."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from gateway.api.disconnect import CLIENT_CLOSED, unless_client_leaves
from gateway.ops.errors import ApiError

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)


def _request(left: asyncio.Event) -> Request:
    async def receive() -> dict:
        await left.wait()
        return {"type": "http.disconnect"}

    return Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)


def test_the_answer_comes_back_while_the_client_stays():
    async def scenario() -> str:
        async def answer() -> str:
            await asyncio.sleep(0)
            return "answer"

        return await unless_client_leaves(_request(asyncio.Event()), answer())

    assert asyncio.run(scenario()) == "answer"


@pytest.mark.parametrize("made_of_it", [None, RuntimeError("the upstream request was torn down")])
def test_a_client_leaving_is_a_499_whatever_the_wait_makes_of_its_cancellation(made_of_it):
    async def scenario() -> tuple[ApiError, int]:
        left, waiting = asyncio.Event(), asyncio.Event()

        async def backend() -> str:
            try:
                waiting.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if made_of_it is None:
                    raise
                raise made_of_it from None
            return "never"

        async def client() -> None:
            await waiting.wait()
            left.set()

        leaving = asyncio.get_running_loop().create_task(client())
        with pytest.raises(ApiError) as caught:
            await unless_client_leaves(_request(left), backend())
        await leaving
        task = asyncio.current_task()
        assert task is not None
        return caught.value, task.cancelling() if hasattr(task, "cancelling") else 0

    error, cancels_left = asyncio.run(scenario())
    assert error.status == CLIENT_CLOSED
    assert cancels_left == 0  # nothing left pending on the request's task
