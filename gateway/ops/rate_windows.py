"""The counts behind per-key limits (key_limits_config.py): requests and
tokens in the current minute, and requests in flight, per key name. A
minute is a fixed window (the clock's seconds // 60), as Redis counts it
with INCR and EXPIREAT (https://redis.io/docs/latest/commands/incr/,
"Pattern: Rate limiter"): a refusal's `Retry-After` is the rest of the
minute. `LocalWindows` counts in this process; rate_windows_redis.py
counts in the store's Redis, shared by every replica."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.ops.key_limits_config import KeyLimits

WINDOW_SECONDS = 60
STREAM_RETRY_SECONDS = 1  # a refusal for streams in flight: as the global cap's (api/limits.py)


@dataclass(frozen=True, slots=True)
class Refusal:
    limit: str  # requests, tokens or streams: the metric's label
    retry_after: int  # whole seconds


class Windows(Protocol):
    clock: Callable[[], float]

    async def admit(self, name: str, limits: KeyLimits) -> Refusal | Windows:
        """Count one request of `name`'s and answer the windows that counted
        it (where it must `end`), or say which limit refuses it."""

    async def end(self, name: str, limits: KeyLimits, tokens: int) -> None:
        """The request ended, having used `tokens`."""

    async def close(self) -> None: ...


def window_of(now: float) -> int:
    return int(now // WINDOW_SECONDS)


def refusal(limit: str, now: float) -> Refusal:
    if limit == "streams":
        return Refusal(limit, STREAM_RETRY_SECONDS)
    rest = (window_of(now) + 1) * WINDOW_SECONDS - now
    return Refusal(limit, max(1, math.ceil(rest)))


class LocalWindows:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._minutes: dict[str, tuple[int, int, int]] = {}  # name -> (window, requests, tokens)
        self._in_flight: dict[str, int] = {}

    def _minute(self, name: str, window: int) -> tuple[int, int, int]:
        counts = self._minutes.get(name)
        return counts if counts is not None and counts[0] == window else (window, 0, 0)

    async def admit(self, name: str, limits: KeyLimits) -> Refusal | LocalWindows:
        now = self.clock()
        window, requests, tokens = self._minute(name, window_of(now))
        in_flight = self._in_flight.get(name, 0)
        if limits.tokens_per_minute is not None and tokens >= limits.tokens_per_minute:
            return refusal("tokens", now)
        if limits.requests_per_minute is not None and requests >= limits.requests_per_minute:
            return refusal("requests", now)
        if limits.concurrent_streams is not None and in_flight >= limits.concurrent_streams:
            return refusal("streams", now)
        self._minutes[name] = (window, requests + 1, tokens)
        self._in_flight[name] = in_flight + 1
        return self

    async def end(self, name: str, limits: KeyLimits, tokens: int) -> None:
        self._in_flight[name] -= 1
        window, requests, used = self._minute(name, window_of(self.clock()))
        self._minutes[name] = (window, requests, used + tokens)

    async def close(self) -> None:
        pass
