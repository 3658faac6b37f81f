"""An asyncio event loop on a virtual clock, for tests of timers.

The loop's time moves only when the loop has nothing left to run but
timers: it then jumps to the next timer at once instead of sleeping. A
test of a deadline or a keep-alive period thus checks what the code
scheduled, to the exact second, and a loaded machine cannot break it: a
pause of the process (other jobs, a slow CI runner) takes no virtual time.
Sockets and pipes are still polled, without waiting.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

_Result = TypeVar("_Result")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0


class _SkippingSelector(selectors.DefaultSelector):
    """Polls instead of waiting, and moves the clock by the wait it skipped."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer at all: only I/O can wake the loop
            return super().select(None)
        ready = super().select(0)
        if not ready:
            self._clock.now += timeout
        return ready


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._clock = _Clock()
        super().__init__(_SkippingSelector(self._clock))

    def time(self) -> float:
        return self._clock.now


def run(main: Coroutine[Any, Any, _Result]) -> _Result:
    """`asyncio.run(main)` on a VirtualClockLoop (asyncio.Runner's
    loop_factory is Python 3.11+)."""
    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
