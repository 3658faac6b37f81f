"""A value asked of the backend once and shared: the server's chat template
(`chat_template: backend`), its server kind (`backend.server` unset).

One caller asks at a time and the others wait for its answer. Only an
answer is kept: a failure (or None, "cannot tell yet") reaches the caller
that asked, and the next caller asks again, so a backend that was down or
still loading is asked once more when it is back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

_Value = TypeVar("_Value")


class Once(Generic[_Value]):
    def __init__(self) -> None:
        self._kept: list[_Value] = []
        self._lock = anyio.Lock()

    async def get(self, ask: Callable[[], Awaitable[_Value]]) -> _Value:
        """The kept answer, else what `ask` answers now (kept unless None)."""
        if not self._kept:
            async with self._lock:
                if not self._kept:
                    answer = await ask()
                    if answer is None:
                        return answer
                    self._kept.append(answer)
        return self._kept[0]

    def known(self) -> _Value | None:
        """The kept answer, or None if none is kept yet; asks nothing."""
        return self._kept[0] if self._kept else None
