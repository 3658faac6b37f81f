"""Per-key limit counts in the store's Redis (store.backend: redis), shared
by every replica: the same fixed minutes as rate_windows.py, each check and
count one Lua script, so two replicas cannot both take the last request
(https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
Each call has the store's deadlines (store.read_timeout, store.write_timeout,
as store/redis_store.py).

A Redis that fails or passes its deadline fails open, as Envoy's rate limit
filter does by default (`failure_mode_deny: false`,
https://www.envoyproxy.io/docs/envoy/latest/api-v3/extensions/filters/http/ratelimit/v3/rate_limit.proto):
a gateway that refuses every request because its counter is away turns a
Redis outage into an outage of every model. It is not unlimited meanwhile:
the requests are counted in this process (rate_windows.py's LocalWindows),
so each replica holds each key to its limits on its own, and Redis is not
asked again for `RETRY_SECONDS`, so that a Redis that hangs does not add its
deadline to every request. A request ends in the counts that admitted it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.ops.key_limits_config import KeyLimits
from gateway.ops.rate_windows import WINDOW_SECONDS, LocalWindows, Refusal, Windows, refusal, window_of

_PREFIX = "parsegate:limits:"
MINUTE_TTL = 2 * WINDOW_SECONDS  # relative: a replica's clock a little off Redis's loses no count
IN_FLIGHT_TTL = 3600  # seconds a key's in-flight count outlives its last request (a replica that died holding some)
RETRY_SECONDS = 5.0  # after a failure, seconds the counts stay in this process before Redis is asked again
log = logging.getLogger("parsegate.limits")
_Result = TypeVar("_Result")


class RedisFailed(Exception):
    pass


# KEYS: the minute's requests, the minute's tokens, the requests in flight;
# ARGV: the three limits (0: none), the seconds a minute's count lives, the
# seconds the in-flight count does. Answers the limit
# that refuses, or false once the request is counted.
_ADMIT = """
local rpm, tpm, most = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if tpm > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= tpm then return 'tokens' end
if rpm > 0 and tonumber(redis.call('GET', KEYS[1]) or '0') >= rpm then return 'requests' end
if most > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= most then return 'streams' end
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if most > 0 then
    redis.call('INCR', KEYS[3])
    redis.call('EXPIRE', KEYS[3], ARGV[5])
end
return false
"""


# KEYS: the requests in flight, the minute's tokens; ARGV: how many ended
# (0 or more), their tokens, the seconds a minute's count lives. A count is
# never taken below 0: a decrement whose answer timed out may have been
# done, and is owed again (`_owed`).
_END = """
if tonumber(ARGV[1]) > 0 and redis.call('DECRBY', KEYS[1], ARGV[1]) < 0 then
    redis.call('SET', KEYS[1], 0, 'KEEPTTL')
end
if tonumber(ARGV[2]) > 0 then
    redis.call('INCRBY', KEYS[2], ARGV[2])
    redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return false
"""


def _keys(name: str, window: int) -> list[str]:
    return [f"{_PREFIX}{name}:requests:{window}", f"{_PREFIX}{name}:tokens:{window}", f"{_PREFIX}{name}:in_flight"]


class RedisWindows:
    def __init__(
        self, url: str, read_timeout: float, write_timeout: float, clock: Callable[[], float] = time.time
    ) -> None:
        self._deadline = max(read_timeout, write_timeout)
        self._client = redis.Redis.from_url(url, socket_connect_timeout=self._deadline, socket_timeout=self._deadline)
        self._admit = self._client.register_script(_ADMIT)
        self._end = self._client.register_script(_END)
        self.local = LocalWindows(clock)  # the counts while Redis is away
        self._away_until = -math.inf  # by `clock`: Redis is not asked before
        self._owed: Counter[str] = Counter()  # in-flight counts whose requests ended while Redis was away
        self.clock = clock

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._clock = self.local.clock = clock

    async def _run(self, work: Awaitable[_Result]) -> _Result:
        try:
            async with asyncio.timeout(self._deadline):
                return await work
        except (RedisError, TimeoutError, OSError) as error:
            log.warning(
                "per-key limits: Redis failed (%s); counted in this process for %g s",
                type(error).__name__,
                RETRY_SECONDS,
            )
            self._away_until = self.clock() + RETRY_SECONDS
            raise RedisFailed from None

    async def admit(self, name: str, limits: KeyLimits) -> Refusal | Windows:
        now = self.clock()
        if now < self._away_until:
            return await self.local.admit(name, limits)
        window = window_of(now)
        limits_argv = [limits.requests_per_minute or 0, limits.tokens_per_minute or 0, limits.concurrent_streams or 0]
        argv = [*limits_argv, MINUTE_TTL, IN_FLIGHT_TTL]
        try:
            if self._owed:
                await self._settle()
            refused = await self._run(self._admit(keys=_keys(name, window), args=argv))
        except RedisFailed:
            return await self.local.admit(name, limits)
        return refusal(refused.decode(), now) if refused else self

    async def end(self, name: str, limits: KeyLimits, tokens: int) -> None:
        window = window_of(self.clock())
        _, tokens_key, in_flight_key = _keys(name, window)
        ended = 1 if limits.concurrent_streams is not None else 0
        if not ended and not tokens:
            return
        try:
            await self._run(self._end(keys=[in_flight_key, tokens_key], args=[ended, tokens, MINUTE_TTL]))
        except RedisFailed:  # the tokens go uncounted; the in-flight count is settled when Redis is back
            self._owed[in_flight_key] += ended

    async def _settle(self) -> None:
        owed, self._owed = +self._owed, Counter()
        try:
            for key, count in list(owed.items()):
                await self._run(self._end(keys=[key, key], args=[count, 0, 0]))
                del owed[key]
        finally:
            self._owed.update(owed)

    async def close(self) -> None:
        await self._client.aclose()
