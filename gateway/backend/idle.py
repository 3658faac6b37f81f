"""An idle deadline for one upstream stream, cheap enough to check per line.

`asyncio.timeout` around every line costs more than parsing the line, so
one timer per stream watches instead: the reader marks when it starts and
stops waiting for the backend, and the timer cancels the reading task only
if a single wait has lasted `seconds`. Time spent delivering lines to a
slow client never counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

_Item = TypeVar("_Item")


class IdleExpired(Exception):
    """The backend sent nothing for the configured number of seconds."""


async def within_idle(lines: AsyncIterator[_Item], seconds: float) -> AsyncIterator[_Item]:
    """`lines`, raising IdleExpired when one takes longer than `seconds` to arrive."""
    watch = _Watch(seconds)
    try:
        while True:
            watch.since = watch.loop.time()
            try:
                line = await anext(lines, None)
            except asyncio.CancelledError:
                if watch.expired and watch.only_canceller():
                    raise IdleExpired from None
                raise
            watch.since = None
            if line is None:
                return
            yield line
    finally:
        watch.stop()


class _Watch:
    def __init__(self, seconds: float) -> None:
        self.loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a watch is made by the task reading the stream"
        self.task = task
        self.seconds = seconds
        self.since: float | None = None
        self.expired = False
        self._timer = self.loop.call_later(seconds, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if self.since is not None and now - self.since >= self.seconds:
            self.expired = True
            self.task.cancel()
            return
        start = now if self.since is None else self.since
        self._timer = self.loop.call_at(start + self.seconds, self._check)

    def only_canceller(self) -> bool:
        """Whether the timer's cancel is the task's only one (then it is
        ours to swallow). Python 3.10 cannot count cancels: there the
        expired timer is taken as the cause."""
        uncancel = getattr(self.task, "uncancel", None)
        return uncancel is None or uncancel() == 0

    def stop(self) -> None:
        self._timer.cancel()
