"""The per-body idle deadline (gateway/upstream/body_push.py, as the pushed body
reads a backend's answer, body_push.py): only time spent waiting for the
backend counts, not time a slow client takes, and an expired wait is the
backend's 504, for a stream and for a whole body alike. On a virtual clock
(tests/virtual_clock.py), so that a loaded machine neither fires the
deadline early nor late."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.ops.errors import ApiError
from gateway.upstream.errors import UpstreamErrors
from gateway.upstream.transport import Transport, UpstreamResponse
from tests import virtual_clock

SECONDS = 0.05
ERRORS = UpstreamErrors("m", None, lambda text: text)


async def events_then_wait(gate: asyncio.Event) -> AsyncIterator[bytes]:
    yield b"data: first\n\n"
    await gate.wait()
    yield b"data: second\n\ndata: [DONE]\n\n"


def _answer(gate: asyncio.Event) -> UpstreamResponse:
    return UpstreamResponse(200, "", {}, events_then_wait(gate), lambda: None)


def _transport(seconds: float = SECONDS) -> Transport:
    return Transport(1, 1, 1, seconds, demo=False)


def test_a_wait_longer_than_the_deadline_is_a_504_when_the_deadline_has_passed():
    async def run():
        loop = asyncio.get_running_loop()
        seen = []

        def deliver(payloads: list[bytes]) -> None:
            seen.append((payloads, loop.time()))

        with pytest.raises(ApiError) as failed:
            await _transport().push_payloads(_answer(asyncio.Event()), ERRORS, deliver, drain_seconds=1)
        return seen, loop.time(), failed.value

    seen, expired_at, error = virtual_clock.run(run())
    assert [payloads for payloads, _ in seen] == [[b"first"]]
    assert expired_at - seen[0][1] == pytest.approx(SECONDS)
    assert error.status == 504 and error.body["error"]["code"] == "upstream_timeout"
    assert "stopped sending for 0.05 s" in error.body["error"]["message"]


def test_a_whole_body_that_stops_coming_is_a_504_too():
    async def run():
        with pytest.raises(ApiError) as failed:
            await _transport().read(_answer(asyncio.Event()), ERRORS)
        return failed.value

    error = virtual_clock.run(run())
    assert error.status == 504 and "stopped sending for 0.05 s" in error.body["error"]["message"]


def test_time_spent_by_a_slow_client_does_not_count():
    async def run():
        loop = asyncio.get_running_loop()
        seen = []
        gate = asyncio.Event()

        def deliver(payloads: list[bytes]) -> asyncio.Future[None] | None:
            seen.append(payloads)
            if len(seen) > 1:
                return None
            taken: asyncio.Future[None] = loop.create_future()

            def take() -> None:  # the client takes the write long after the deadline; the backend answers at once
                taken.set_result(None)
                gate.set()

            loop.call_later(4 * SECONDS, take)
            return taken

        await _transport().push_payloads(_answer(gate), ERRORS, deliver, drain_seconds=1)
        return seen

    assert virtual_clock.run(run()) == [[b"first"], [b"second", b"[DONE]"]]


def test_another_cancellation_stays_a_cancellation():
    async def run():
        reading = asyncio.Event()

        def deliver(payloads: list[bytes]) -> None:
            reading.set()

        task = asyncio.create_task(_transport(60).push_payloads(_answer(asyncio.Event()), ERRORS, deliver, 1))
        await reading.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
