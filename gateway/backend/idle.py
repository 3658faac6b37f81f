"""An idle deadline for one upstream stream, cheap enough to check per read.

`asyncio.timeout` around every read costs more than parsing what it
brings, so one timer per stream watches instead: the reader marks when it
starts and stops waiting for the backend (`waiting`, `arrived`), and the
timer cancels the reading task only if a single wait has lasted `seconds`.
Time spent delivering what was read to a slow client never counts.
"""

from __future__ import annotations

import asyncio

from gateway.ops.deadline import cancels_asked, only_canceller


class IdleExpired(Exception):
    """The backend sent nothing for the configured number of seconds."""


class IdleWatch:
    """The deadline of the current task's reads; `stop` it when done."""

    __slots__ = ("_loop", "_task", "_before", "_seconds", "_since", "_expired", "_timer")

    def __init__(self, seconds: float) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a watch is made by the task reading the stream"
        self._task = task
        self._before = cancels_asked(task)
        self._seconds = seconds
        self._since: float | None = None
        self._expired = False
        self._timer = self._loop.call_later(seconds, self._check)

    def waiting(self) -> None:
        """A read of the backend starts."""
        self._since = self._loop.time()

    def arrived(self) -> None:
        """The read is done."""
        self._since = None

    def cancelled(self) -> IdleExpired | None:
        """Called as a read is cancelled: the `IdleExpired` to raise instead
        when the cancel was the watch's own and nobody else's (then it is
        the watch's to swallow; deadline.py tells)."""
        return IdleExpired() if self._expired and only_canceller(self._task, self._before) else None

    def _check(self) -> None:
        now = self._loop.time()
        if self._since is not None and now - self._since >= self._seconds:
            self._expired = True
            self._task.cancel()
            return
        start = now if self._since is None else self._since
        self._timer = self._loop.call_at(start + self._seconds, self._check)

    def stop(self) -> None:
        self._timer.cancel()
