"""A value asked of the backend once and shared: the server's chat template
(`chat_template: backend`), the parsers it implies (`parsers_from:
backend`), its server kind (`backend.server` unset).

One caller asks at a time and the others wait for its answer. An answer
is kept for good. A failure (an error `ask` raises, or None, "cannot tell
yet") is kept for `FAILURE_KEPT_SECONDS`: the callers in that window,
those waiting on the one that asked included, get the same error (or None)
without asking, and the first caller after it asks again, so that a server
that keeps failing is asked once per window, not once per request, and one
that was down or still loading is picked up when it is back. A caller
cancelled while it asks (its client gone) leaves nothing kept: the next
caller asks.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

_Value = TypeVar("_Value")
FAILURE_KEPT_SECONDS = 5.0


class AskedOnce(Generic[_Value]):
    def __init__(self) -> None:
        self._kept: list[_Value] = []
        self._failure: Exception | None = None  # the error kept (None with a deadline: None was answered)
        self._failed_until = -float("inf")  # time.monotonic() until which the failure is kept
        self._lock = anyio.Lock()

    async def get(self, ask: Callable[[], Awaitable[_Value]]) -> _Value:
        """The kept answer, else the failure kept, else what `ask` answers now."""
        if not self._kept:
            async with self._lock:
                if not self._kept:
                    return await self._ask_unless_failed(ask)
        return self._kept[0]

    def known(self) -> _Value | None:
        """The kept answer, or None if none is kept yet; asks nothing."""
        return self._kept[0] if self._kept else None

    async def _ask_unless_failed(self, ask: Callable[[], Awaitable[_Value]]) -> _Value:
        if time.monotonic() < self._failed_until:
            if self._failure is not None:
                raise self._failure.with_traceback(None)  # not the frames of every caller before
            return None  # type: ignore[return-value]  # None was the answer `ask` gave
        try:
            answer = await ask()
        except Exception as error:
            self._fail(error)
            raise
        if answer is None:
            self._fail(None)
            return answer
        self._kept.append(answer)
        return answer

    def _fail(self, failure: Exception | None) -> None:
        self._failure = failure
        self._failed_until = time.monotonic() + FAILURE_KEPT_SECONDS
