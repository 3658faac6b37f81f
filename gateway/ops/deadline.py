"""Time limits on the request path, on the event loop's own timer.

anyio's cancel scopes (`fail_after`, `move_on_after`) cost about 8 µs each
to enter and leave, and its task groups more, where a timer handle costs
under 1 µs (docs/benchmarks.md, "Server side"); a streamed request used
six of them. `Deadline` is a block that one timer cancels: when it
expires while the block waits, the block's task is cancelled there, and
the cancellation comes out of the block as `TimeoutError` (`expired` is
then set), unless somebody else cancelled the task as well.

Whether a cancellation was the timer's own is told as `asyncio.timeout`
tells it, by the task's count of cancel requests (`Task.cancelling` and
`Task.uncancel`): a cancellation somebody else asked for as well goes
through as a cancellation. `asyncio.timeout` itself is an `async with`
block with no move-on form; a `Deadline` is a plain `with` block that can
move on quietly.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


def cancels_asked(task: asyncio.Task) -> int:
    """How many cancellations of `task` are pending."""
    return task.cancelling()


def only_canceller(task: asyncio.Task, before: int = 0) -> bool:
    """Called by the one that cancelled `task`, as the cancellation is caught
    or the wait ends: withdraws its request, and tells whether nobody else
    asked since `before` (then the catcher may swallow the cancellation), as
    `asyncio.timeout` does on leaving its block."""
    return task.uncancel() <= before


class Deadline:
    """`with Deadline(seconds):` raises `TimeoutError` when the block is
    still waiting after `seconds`; with `move_on`, the block is left
    quietly instead (`expired` tells). Only the deadline's own expiry is
    turned: a TimeoutError the block raises itself goes through as it is."""

    __slots__ = ("_seconds", "_move_on", "_task", "_before", "_timer", "expired")

    def __init__(self, seconds: float, *, move_on: bool = False) -> None:
        self._seconds = seconds
        self._move_on = move_on
        self.expired = False

    def __enter__(self) -> Deadline:
        task = asyncio.current_task()
        assert task is not None, "a deadline is set by a task"
        self._task = task
        self._before = cancels_asked(task)
        self._timer = asyncio.get_running_loop().call_later(self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        self.expired = True
        self._task.cancel()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        self._timer.cancel()
        if not self.expired:
            return False
        ours_alone = only_canceller(self._task, self._before)  # withdrawn either way, as asyncio.timeout does
        if not (ours_alone and kind is not None and issubclass(kind, asyncio.CancelledError)):
            return False
        if self._move_on:
            return True
        raise TimeoutError(f"not done within {self._seconds:g} s") from None
