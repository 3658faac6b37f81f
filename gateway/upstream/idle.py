"""An idle deadline for one upstream body, cheap enough to keep per piece.

`asyncio.timeout` around every read costs more than parsing what it
brings, so one timer per body watches instead (`IdleTimer`): the reader
(body_push.py) marks when the backend's silence starts and stops
counting, and the timer acts only if one silence has lasted `seconds`.
Time spent delivering what was read to a slow client never counts. The
body's push then ends with `IdleExpired`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class IdleExpired(Exception):
    """The backend sent nothing for the configured number of seconds."""


class IdleTimer:
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
