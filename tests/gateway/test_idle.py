"""The per-stream idle deadline: only time spent waiting for the backend
counts. On a virtual clock (tests/virtual_clock.py), so that a loaded
machine neither fires the deadline early nor late."""

from __future__ import annotations

import asyncio

import pytest

from gateway.backend.idle import IdleExpired, within_idle
from tests import virtual_clock

SECONDS = 0.05


async def lines_then_wait(gate: asyncio.Event):
    yield "first"
    await gate.wait()
    yield "second"


def test_a_wait_longer_than_the_deadline_expires_when_the_deadline_has_passed():
    async def run():
        loop = asyncio.get_running_loop()
        seen = []
        with pytest.raises(IdleExpired):
            async for line in within_idle(lines_then_wait(asyncio.Event()), SECONDS):
                seen.append((line, loop.time()))
        return seen, loop.time()

    seen, expired_at = virtual_clock.run(run())
    assert [line for line, _ in seen] == ["first"]
    assert expired_at - seen[0][1] == pytest.approx(SECONDS)


def test_time_spent_by_a_slow_consumer_does_not_count():
    async def run():
        seen = []
        gate = asyncio.Event()
        async for line in within_idle(lines_then_wait(gate), SECONDS):
            seen.append(line)
            await asyncio.sleep(4 * SECONDS)  # the consumer is slow: this is what is tested, not a synchronisation
            gate.set()
        return seen

    assert virtual_clock.run(run()) == ["first", "second"]


def test_another_cancellation_stays_a_cancellation():
    async def run():
        async def consume():
            async for _ in within_idle(lines_then_wait(asyncio.Event()), 60):
                reading.set()

        reading = asyncio.Event()
        task = asyncio.create_task(consume())
        await reading.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
