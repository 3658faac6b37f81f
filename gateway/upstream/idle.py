"""An idle deadline for one upstream stream, cheap enough to check per read.

`asyncio.timeout` around every read costs more than parsing what it
brings, so one timer per stream watches instead (`Silence`): the reader
marks when the backend's silence starts and stops counting, and the timer
acts only if one silence has lasted `seconds`. Time spent delivering what
was read to a slow client never counts. A task that reads the stream
(`IdleWatch`) is cancelled then; a pushed body (body_push.py) ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.ops.deadline import cancels_asked, only_canceller


class IdleExpired(Exception):
    """The backend sent nothing for the configured number of seconds."""


class Silence:
    """Calls `expired` once the backend's silence, counted from `since` (the
    loop's time; `None` while it does not count), has lasted `seconds`. One
    timer, set again for the next time it may be due; `stop` it when done."""

    __slots__ = ("_loop", "_seconds", "_expired", "since", "_timer")

    def __init__(self, seconds: float, expired: Callable[[], None], since: float | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._seconds = seconds
        self._expired = expired
        self.since = since
        self._timer = self._loop.call_later(seconds, self._check)

    def _check(self) -> None:
        now = self._loop.time()
        if self.since is not None and now - self.since >= self._seconds:
            self._expired()
            return
        start = now if self.since is None else self.since
        self._timer = self._loop.call_at(start + self._seconds, self._check)

    def stop(self) -> None:
        self._timer.cancel()


class IdleWatch:
    """The deadline of the current task's reads; `stop` it when done."""

    __slots__ = ("_loop", "_task", "_before", "_expired", "_silence")

    def __init__(self, seconds: float) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a watch is made by the task reading the stream"
        self._task = task
        self._before = cancels_asked(task)
        self._expired = False
        self._silence = Silence(seconds, self._expire)

    def waiting(self) -> None:
        """A read of the backend starts."""
        self._silence.since = self._loop.time()

    def arrived(self) -> None:
        """The read is done."""
        self._silence.since = None

    def cancelled(self) -> IdleExpired | None:
        """Called as a read is cancelled: the `IdleExpired` to raise instead
        when the cancel was the watch's own and nobody else's (then it is
        the watch's to swallow; deadline.py tells)."""
        return IdleExpired() if self._expired and only_canceller(self._task, self._before) else None

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()

    def stop(self) -> None:
        self._silence.stop()
