"""Records and item lists in Redis, shared by every gateway replica, with
redis-py's asyncio client (https://redis.readthedocs.io/en/stable/examples/asyncio_examples.html).
A record is a string; a key's items are a list of item ids and a hash of
their values; every key expires on its own (EXPIREAT), so nothing needs
purging. Multi-key writes are MULTI/EXEC transactions, or a Lua script
where the write depends on what is there (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
Each call, connecting included, has its deadline (`store.read_timeout`,
`store.write_timeout`): a server that stops answering (paused, or a
script running long) is a 503 when it passes, and the connection is
dropped, never reused with its answer pending (redis-py disconnects a
connection whose command is cancelled). Redis answers one command at a
time, so a read waits for a write ahead of it at the server whatever
the client does; the client's pool opens a connection for each call
running at once (up to redis-py's 100), so no call waits for another's
connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.ops.store.storage import RepeatedItemId, Storage, StoreUnavailable, TooManyItems

_PREFIX = "parsegate:"
# KEYS: the record, its item-id list, its item-value hash, then (for a record
# written with the items) that record's three; ARGV: the expiry, the most items
# the key may hold (0: no bound), that record's value ('' without it), then
# each item's id and value. Answers false once written, {"missing"},
# {"repeated", id} or {"full", items held} with nothing written. Every check
# comes before the first write, and a script runs whole: the record and the
# items are written together or not at all (Redis checks ACL key permissions
# on KEYS before the script runs).
_APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local added = (#ARGV - 3) / 2
for i = 1, added do
    if redis.call('HEXISTS', KEYS[3], ARGV[2 + 2 * i]) == 1 then return {'repeated', ARGV[2 + 2 * i]} end
end
local held = redis.call('LLEN', KEYS[2])
local most = tonumber(ARGV[2])
if most > 0 and held + added > most then return {'full', held} end
if #KEYS == 6 then
    redis.call('SET', KEYS[4], ARGV[3], 'EXAT', ARGV[1])
    redis.call('EXPIREAT', KEYS[5], ARGV[1])
    redis.call('EXPIREAT', KEYS[6], ARGV[1])
end
for i = 1, added do
    redis.call('RPUSH', KEYS[2], ARGV[2 + 2 * i])
    redis.call('HSET', KEYS[3], ARGV[2 + 2 * i], ARGV[3 + 2 * i])
end
for k = 1, 3 do redis.call('EXPIREAT', KEYS[k], ARGV[1]) end
return false
"""
# KEYS: the record (then its item-id list and item-value hash); ARGV: the
# owner's prefix. GET answers the record's value if it starts with it;
# DELETE removes the three keys if so, and answers whether it did.
_GET = """
local value = redis.call('GET', KEYS[1])
if value and string.sub(value, 1, #ARGV[1]) == ARGV[1] then return value end
return false
"""
_DELETE = """
local value = redis.call('GET', KEYS[1])
if not value or string.sub(value, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
"""
# KEYS: the record a walk starts from; ARGV: the owner's prefix, the most
# records to read, the records' key prefix. Answers the values of the record
# and of those it follows (storage.py's LINK), newest first, each starting
# with the owner's prefix. The keys after the first are known only from the
# values, so they are not in KEYS: a single Redis server, not a cluster
# (which the multi-key scripts here already need).
_CHAIN = """
local prefix, most = ARGV[1], tonumber(ARGV[2])
local found, key = {}, KEYS[1]
while key and #found < most do
    local value = redis.call('GET', key)
    if not value or string.sub(value, 1, #prefix) ~= prefix then break end
    found[#found + 1] = value
    local link = string.match(value, '^"link":"([^"]+)"', #prefix + 1)
    key = link and ARGV[3] .. link
end
return found
"""
# KEYS: the record, its item-id list, its item-value hash; ARGV: the owner's
# prefix, the new value, the expiry. Answers 1 once replaced, 0 when the
# record is missing or another owner's.
_REPLACE = """
local value = redis.call('GET', KEYS[1])
if not value or string.sub(value, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EXAT', ARGV[3])
redis.call('EXPIREAT', KEYS[2], ARGV[3])
redis.call('EXPIREAT', KEYS[3], ARGV[3])
return 1
"""
_Result = TypeVar("_Result")


def _keys(key: str) -> tuple[str, str, str]:
    """The record's key, its item-id list's and its item-value hash's."""
    return f"{_PREFIX}record:{key}", f"{_PREFIX}order:{key}", f"{_PREFIX}items:{key}"


class RedisStorage(Storage):
    def __init__(self, url: str, read_timeout: float = 5.0, write_timeout: float = 5.0) -> None:
        parts = urlsplit(url)
        self._server = parts.netloc.rpartition("@")[2] or parts.path  # host:port or the socket's path, no password
        self._timeouts = {"read_timeout": read_timeout, "write_timeout": write_timeout}
        longest = max(read_timeout, write_timeout)  # the client's own bounds, for what runs outside a call's deadline
        self._client = redis.Redis.from_url(url, socket_connect_timeout=longest, socket_timeout=longest)
        self._append = self._client.register_script(_APPEND)
        self._get = self._client.register_script(_GET)
        self._delete = self._client.register_script(_DELETE)
        self._replace = self._client.register_script(_REPLACE)
        self._chain = self._client.register_script(_CHAIN)

    async def _run(self, work: Awaitable[_Result], *, writes: bool) -> _Result:
        """`work`'s result, within the write or read deadline."""
        setting = "write_timeout" if writes else "read_timeout"
        deadline = asyncio.timeout(self._timeouts[setting])
        try:
            async with deadline:
                return await work
        except (RedisError, OSError) as error:
            if deadline.expired():
                raise StoreUnavailable(
                    f"the Redis store at {self._server} did not answer within store.{setting} "
                    f"({self._timeouts[setting]:g} s)"
                ) from error
            raise StoreUnavailable(
                f"the Redis store at {self._server} failed: {type(error).__name__}: {error}"
            ) from error

    async def get(self, key: str, now: float, prefix: bytes) -> bytes | None:
        record, _, _ = _keys(key)
        value = await self._run(self._get(keys=[record], args=[prefix]), writes=False)
        return value if isinstance(value, bytes) else None  # bytes: the client decodes nothing

    async def chain(self, key: str, now: float, prefix: bytes, most: int) -> list[bytes]:
        record, _, _ = _keys(key)
        found = await self._run(self._chain(keys=[record], args=[prefix, most, f"{_PREFIX}record:"]), writes=False)
        return [value for value in found if isinstance(value, bytes)]

    async def put(self, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
        record, order, values = _keys(key)

        async def write() -> None:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(record, value, exat=int(expires_at) + 1)
                pipe.expireat(order, int(expires_at) + 1)
                pipe.expireat(values, int(expires_at) + 1)
                for other in renew:  # EXPIREAT leaves a key that is gone gone
                    pipe.expireat(_keys(other)[0], int(expires_at) + 1)
                await pipe.execute()

        await self._run(write(), writes=True)

    async def replace(self, key: str, value: bytes, expires_at: float, now: float, prefix: bytes) -> bool:
        arguments: list[bytes | int] = [prefix, value, int(expires_at) + 1]
        return bool(await self._run(self._replace(keys=list(_keys(key)), args=arguments), writes=True))

    async def delete(self, key: str, prefix: bytes) -> bool:
        return bool(await self._run(self._delete(keys=list(_keys(key)), args=[prefix]), writes=True))

    async def append(
        self,
        key: str,
        items: list[tuple[str, bytes]],
        expires_at: float,
        now: float,
        max_items: int | None = None,
        record: tuple[str, bytes] | None = None,
    ) -> bool:
        keys = list(_keys(key)) + (list(_keys(record[0])) if record is not None else [])
        arguments: list[str | bytes | int] = [int(expires_at) + 1, max_items or 0, record[1] if record else b""]
        for item_id, value in items:
            arguments += [item_id, value]
        refused = await self._run(self._append(keys=keys, args=arguments), writes=True)
        if refused and refused[0] == b"missing":
            return False
        if refused and refused[0] == b"repeated":
            raise RepeatedItemId(refused[1].decode())
        if refused:
            raise TooManyItems(int(refused[1]))
        return True

    async def items(self, key: str) -> list[bytes]:
        _, order, values = _keys(key)

        async def read() -> list[bytes]:
            ids = await self._client.lrange(order, 0, -1)
            found = await self._client.hmget(values, ids) if ids else []
            return [value for value in found if isinstance(value, bytes)]

        return await self._run(read(), writes=False)

    async def item(self, key: str, item_id: str) -> bytes | None:
        _, _, values = _keys(key)
        value = await self._run(self._client.hget(values, item_id), writes=False)
        return value if isinstance(value, bytes) else None

    async def remove(self, key: str, item_id: str) -> bool:
        _, order, values = _keys(key)

        async def write() -> bool:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.lrem(order, 0, item_id)  # every copy, as SQL's DELETE (a store written before ids were unique)
                pipe.hdel(values, item_id)
                removed, _ = await pipe.execute()
            return bool(removed)

        return await self._run(write(), writes=True)

    async def purge(self, now: float) -> None:
        """Redis expires keys itself."""

    async def check(self) -> None:
        await self._run(self._client.ping(), writes=False)

    async def close(self) -> None:
        await self._client.aclose()
