"""The per-stream idle deadline (gateway/upstream/idle.py, as the transport
reads a streamed body): only time spent waiting for the backend counts,
and an expired wait is the backend's 504. On a virtual clock
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


async def pieces_then_wait(gate: asyncio.Event) -> AsyncIterator[bytes]:
    yield b"first"
    await gate.wait()
    yield b"second"


def _read(gate: asyncio.Event, seconds: float = SECONDS) -> AsyncIterator[bytes]:
    transport = Transport(1, 1, 1, seconds, demo=False)
    return transport.pieces(UpstreamResponse(200, "", {}, pieces_then_wait(gate), lambda: None), ERRORS)


def test_a_wait_longer_than_the_deadline_is_a_504_when_the_deadline_has_passed():
    async def run():
        loop = asyncio.get_running_loop()
        seen = []
        with pytest.raises(ApiError) as failed:
            async for piece in _read(asyncio.Event()):
                seen.append((piece, loop.time()))
        return seen, loop.time(), failed.value

    seen, expired_at, error = virtual_clock.run(run())
    assert [piece for piece, _ in seen] == [b"first"]
    assert expired_at - seen[0][1] == pytest.approx(SECONDS)
    assert error.status == 504 and error.body["error"]["code"] == "upstream_timeout"


def test_time_spent_by_a_slow_consumer_does_not_count():
    async def run():
        seen = []
        gate = asyncio.Event()
        async for piece in _read(gate):
            seen.append(piece)
            await asyncio.sleep(4 * SECONDS)  # the consumer is slow: this is what is tested, not a synchronisation
            gate.set()
        return seen

    assert virtual_clock.run(run()) == [b"first", b"second"]


def test_another_cancellation_stays_a_cancellation():
    async def run():
        async def consume():
            async for _ in _read(asyncio.Event(), 60):
                reading.set()

        reading = asyncio.Event()
        task = asyncio.create_task(consume())
        await reading.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
