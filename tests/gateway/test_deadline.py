"""The loop-timer deadline (gateway/ops/deadline.py): its own expiry comes
out as TimeoutError, anybody else's cancellation as the cancellation."""

from __future__ import annotations

import asyncio

import pytest

from gateway.ops.deadline import Deadline


def test_a_block_still_waiting_at_its_deadline_raises_timeout_error():
    async def scenario() -> Deadline:
        deadline = Deadline(0.01)
        with pytest.raises(TimeoutError), deadline:
            await asyncio.Event().wait()
        await asyncio.sleep(0)  # the task is not left cancelled
        return deadline

    assert asyncio.run(scenario()).expired


def test_a_block_done_in_time_is_left_alone():
    async def scenario() -> tuple[int, bool]:
        with Deadline(60) as deadline:
            await asyncio.sleep(0)
            value = 7
        return value, deadline.expired

    assert asyncio.run(scenario()) == (7, False)


def test_somebody_elses_cancellation_goes_through_as_a_cancellation():
    async def scenario() -> None:
        started = asyncio.Event()

        async def waits() -> None:
            with Deadline(60):
                started.set()
                await asyncio.Event().wait()

        task = asyncio.get_running_loop().create_task(waits())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


class _CancelledByAnotherToo(Deadline):
    """As the deadline expires, somebody else cancels the task as well."""

    def _expire(self) -> None:
        super()._expire()
        self._task.cancel()


def test_the_deadline_does_not_swallow_a_cancellation_that_came_with_its_own():
    async def scenario() -> bool:
        deadline = _CancelledByAnotherToo(0.01)
        with pytest.raises(asyncio.CancelledError), deadline:
            await asyncio.Event().wait()
        return deadline.expired

    async def main() -> bool:
        return await asyncio.get_running_loop().create_task(scenario())

    assert asyncio.run(main())


def test_moving_on_leaves_the_block_quietly_at_the_deadline():
    async def scenario() -> tuple[list[str], bool]:
        done: list[str] = []
        with Deadline(0.01, move_on=True) as deadline:
            await asyncio.Event().wait()
            done.append("never")
        done.append("after")
        return done, deadline.expired

    assert asyncio.run(scenario()) == (["after"], True)


def test_a_timeout_error_of_the_block_itself_goes_through_as_it_is():
    async def scenario() -> None:
        with Deadline(60, move_on=True):
            await asyncio.sleep(0)
            raise TimeoutError("the backend's own")

    with pytest.raises(TimeoutError, match="the backend's own"):
        asyncio.run(scenario())
