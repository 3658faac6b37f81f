"""Per-key limit counts in the store's Redis (store.backend: redis), shared
by every replica: the same fixed minutes as rate_windows.py, each check and
count one Lua script, so two replicas cannot both take the last request
(https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
Each call has the store's deadlines (store.read_timeout, store.write_timeout,
as store/redis_store.py); a Redis that fails or passes its deadline lets
the request through (logged), as Envoy's rate limit filter does by default
(`failure_mode_deny: false`,
https://www.envoyproxy.io/docs/envoy/latest/api-v3/extensions/filters/http/ratelimit/v3/rate_limit.proto)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.ops.key_limits_config import KeyLimits
from gateway.ops.rate_windows import WINDOW_SECONDS, Refusal, refusal, window_of

_PREFIX = "parsegate:limits:"
MINUTE_TTL = 2 * WINDOW_SECONDS  # relative: a replica's clock a little off Redis's loses no count
IN_FLIGHT_TTL = 3600  # seconds a key's in-flight count outlives its last request (a replica that died holding some)
log = logging.getLogger("parsegate.limits")
_Result = TypeVar("_Result")

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


def _keys(name: str, window: int) -> list[str]:
    return [f"{_PREFIX}{name}:requests:{window}", f"{_PREFIX}{name}:tokens:{window}", f"{_PREFIX}{name}:in_flight"]


class RedisWindows:
    def __init__(
        self, url: str, read_timeout: float, write_timeout: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.clock = clock
        self._deadline = max(read_timeout, write_timeout)
        self._client = redis.Redis.from_url(url, socket_connect_timeout=self._deadline, socket_timeout=self._deadline)
        self._admit = self._client.register_script(_ADMIT)

    async def _run(self, work: Awaitable[_Result], fallback: _Result) -> _Result:
        try:
            async with asyncio.timeout(self._deadline):
                return await work
        except (RedisError, TimeoutError, OSError) as error:
            log.warning("per-key limits: Redis failed (%s); the request goes through uncounted", type(error).__name__)
            return fallback

    async def admit(self, name: str, limits: KeyLimits) -> Refusal | None:
        now = self.clock()
        window = window_of(now)
        limits_argv = [limits.requests_per_minute or 0, limits.tokens_per_minute or 0, limits.concurrent_streams or 0]
        argv = [*limits_argv, MINUTE_TTL, IN_FLIGHT_TTL]
        refused = await self._run(self._admit(keys=_keys(name, window), args=argv), None)
        return refusal(refused.decode(), now) if refused else None

    async def end(self, name: str, limits: KeyLimits, tokens: int) -> None:
        window = window_of(self.clock())
        _, tokens_key, in_flight_key = _keys(name, window)
        pipe = self._client.pipeline(transaction=True)
        if limits.concurrent_streams is not None:
            pipe.decr(in_flight_key)
        if tokens:
            pipe.incrby(tokens_key, tokens)
            pipe.expire(tokens_key, MINUTE_TTL)
        if len(pipe):
            await self._run(pipe.execute(), [])

    async def close(self) -> None:
        await self._client.aclose()
