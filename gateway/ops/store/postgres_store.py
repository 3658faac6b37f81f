"""Records and item lists in PostgreSQL, shared by every gateway replica,
with asyncpg (https://magicstack.github.io/asyncpg/current/). Reads and
writes go through pools of their own, so that writes waiting for a lock
(another session's) never hold every connection a read needs: under
MVCC a read does not wait for a row being written
(https://www.postgresql.org/docs/current/mvcc-intro.html). Each call,
connecting and waiting for a pool's connection included, has its
deadline (`store.read_timeout`, `store.write_timeout`): the server ends a
statement still running at it (`statement_timeout`), and a connection
still waiting then (a server that stopped answering) is closed, so
nothing waits for its rollback; a 503 either way, and the transaction
is never committed. The pools open on first use, after the start-up
check (`check`); the tables are created under an advisory lock, so
replicas starting together do not race."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

import asyncpg

from gateway.ops.store.storage import RepeatedItemId, Storage, StoreUnavailable, TooManyItems

_SCHEMA = """
CREATE TABLE IF NOT EXISTS parsegate_records (
    key TEXT PRIMARY KEY, value BYTEA NOT NULL, expires_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS parsegate_items (
    seq BIGSERIAL PRIMARY KEY, key TEXT NOT NULL, item_id TEXT NOT NULL,
    value BYTEA NOT NULL, expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS parsegate_items_by_key ON parsegate_items (key, seq);
CREATE INDEX IF NOT EXISTS parsegate_items_by_id ON parsegate_items (key, item_id);
CREATE INDEX IF NOT EXISTS parsegate_records_by_expiry ON parsegate_records (expires_at);
CREATE INDEX IF NOT EXISTS parsegate_items_by_expiry ON parsegate_items (expires_at);
"""
_TABLES = "SELECT count(to_regclass(name)) FROM unnest(ARRAY['parsegate_records', 'parsegate_items']) AS name"
_SCHEMA_LOCK = 0x70617273  # pg_advisory_xact_lock's key while the tables are created
_ITEMS_LOCK = 0x69746D73  # with the key's hash: pg_advisory_xact_lock's keys while a key's items are added
_STARTS = "substring(value FROM 1 FOR length(${0}::bytea)) = ${0}::bytea"  # the value starts with the owner's prefix
# The record and those it follows (storage.py's LINK), newest first: $1 the
# key, $2 now, $3 the owner's prefix, $4 the most records. A link is read off
# the start of a value after the owner's prefix; `escape` keeps its ASCII as
# it is, so a cut through a multi-byte character never fails.
_CHAIN = f"""
WITH RECURSIVE chain (value, depth) AS (
    SELECT value, 1 FROM parsegate_records WHERE key = $1 AND expires_at > $2 AND {_STARTS.format(3)}
    UNION ALL
    SELECT record.value, chain.depth + 1 FROM chain JOIN parsegate_records AS record
    ON record.key = substring(
        encode(substring(chain.value FROM length($3::bytea) + 1 FOR 1024), 'escape') FROM '^"link":"([^"]+)"'
    )
    WHERE chain.depth < $4 AND record.expires_at > $2
    AND substring(record.value FROM 1 FOR length($3::bytea)) = $3::bytea
)
SELECT value FROM chain ORDER BY depth
"""
_Result = TypeVar("_Result")
_FAILURES = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)
READERS = 4  # connections of the pool reads go through
WRITERS = 10  # connections of the pool writes go through
PURGE_TIMEOUT = 300.0  # seconds the hourly purge may take: a request's deadline would cut a large one short


async def _put(db: asyncpg.Connection, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
    await db.execute(
        "INSERT INTO parsegate_records VALUES ($1, $2, $3) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at",
        key,
        value,
        expires_at,
    )
    await db.execute("UPDATE parsegate_items SET expires_at = $1 WHERE key = $2", expires_at, key)
    if renew:
        await db.execute(
            "UPDATE parsegate_records SET expires_at = $1 WHERE key = ANY($2::text[])", expires_at, list(renew)
        )


async def _create_tables(db: asyncpg.Connection) -> None:
    await db.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK)
    if await db.fetchval(_TABLES) < 2:  # another replica's writes may be running: lock nothing
        await db.execute(_SCHEMA)


async def _in_transaction(
    pool: asyncpg.Pool, work: Callable[[asyncpg.Connection], Awaitable[_Result]], deadline: float, cut: list[bool]
) -> _Result:
    """`work`'s result, in a transaction on one of `pool`'s connections,
    by the event loop's time `deadline`: waiting for a connection ends
    then, and a connection still in use then is closed (`cut` says so),
    so that its `work`, its rollback and its release fail at once."""
    async with asyncio.timeout_at(deadline):
        connection = await pool.acquire()
    loop = asyncio.get_running_loop()

    def cut_off() -> None:
        cut.append(True)
        connection.terminate()

    cutting = loop.call_at(deadline, cut_off)
    try:
        # the server ends a statement still running at the deadline: a setting of the transaction's own, sent
        # with its BEGIN in one round trip (PgBouncer refuses a startup parameter it does not know, "FATAL:
        # unsupported startup parameter": https://github.com/pgbouncer/pgbouncer/issues/1074)
        left = max(math.ceil((deadline - loop.time()) * 1000), 1)  # ms
        await connection.execute(f"BEGIN; SET LOCAL statement_timeout = {left}")
        try:
            result = await work(connection)
        except BaseException:
            await connection.execute("ROLLBACK")  # on a connection cut off, it fails at once
            raise
        await connection.execute("COMMIT")
        return result
    finally:
        cutting.cancel()
        # within what is left of its time; past it, or failing, the pool closes the connection (and opens
        # another when asked): `work`'s answer, or its failure, stands, and a committed write is no 503
        with contextlib.suppress(*_FAILURES):
            await pool.release(connection, timeout=max(deadline - loop.time(), 0.0))


class PostgresStorage(Storage):
    def __init__(self, url: str, read_timeout: float = 5.0, write_timeout: float = 5.0) -> None:
        self._url = url
        self._server = urlsplit(url).netloc.rpartition("@")[2] or "the default server"  # host:port, no password
        self._timeouts = {"read_timeout": read_timeout, "write_timeout": write_timeout}
        self._pools: dict[bool, asyncpg.Pool] = {}  # by whether it writes
        self._opening = asyncio.Lock()

    async def _run(
        self, work: Callable[[asyncpg.Connection], Awaitable[_Result]], *, writes: bool, seconds: float | None = None
    ) -> _Result:
        """`work`'s result, in a transaction on a connection of the read or
        the write pool, within that pool's deadline (or `seconds`)."""
        setting = "write_timeout" if writes else "read_timeout"
        seconds = seconds or self._timeouts[setting]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        cut: list[bool] = []
        try:
            async with asyncio.timeout_at(deadline):
                pool = self._pools.get(writes) or await self._open(writes, deadline, cut)
            return await _in_transaction(pool, work, deadline, cut)
        except _FAILURES as error:
            if cut or loop.time() >= deadline:
                raise StoreUnavailable(
                    f"the PostgreSQL store at {self._server} did not answer within store.{setting} ({seconds:g} s)"
                ) from error
            raise StoreUnavailable(
                f"the PostgreSQL store at {self._server} failed: {type(error).__name__}: {error}"
            ) from error

    async def _open(self, writes: bool, deadline: float, cut: list[bool]) -> asyncpg.Pool:
        """The read or the write pool, opened by one request at a time (the
        first requests and the start-up purge come together): one of each
        per store, and no `CREATE INDEX` (which locks its table, even when
        the index is there) while this store's own writes run, which
        deadlocked with them."""
        async with self._opening:
            return self._pools.get(writes) or await self._new_pool(writes, deadline, cut)

    async def _new_pool(self, writes: bool, deadline: float, cut: list[bool]) -> asyncpg.Pool:
        seconds = self._timeouts["write_timeout" if writes else "read_timeout"]
        pool = await asyncpg.create_pool(
            self._url,
            min_size=1,
            max_size=WRITERS if writes else READERS,
            timeout=seconds,  # connecting
        )
        try:
            if not self._pools:  # the first pool: the tables, if they are missing
                await _in_transaction(pool, _create_tables, deadline, cut)
        except BaseException:
            pool.terminate()  # closing would wait for a server that may not answer
            raise
        self._pools[writes] = pool
        return pool

    async def get(self, key: str, now: float, prefix: bytes) -> bytes | None:
        return await self._run(
            lambda db: db.fetchval(
                f"SELECT value FROM parsegate_records WHERE key = $1 AND expires_at > $2 AND {_STARTS.format(3)}",
                key,
                now,
                prefix,
            ),
            writes=False,
        )

    async def chain(self, key: str, now: float, prefix: bytes, most: int) -> list[bytes]:
        async def read(db: asyncpg.Connection) -> list[bytes]:
            return [row["value"] for row in await db.fetch(_CHAIN, key, now, prefix, most)]

        return await self._run(read, writes=False)

    async def put(self, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
        await self._run(lambda db: _put(db, key, value, expires_at, renew), writes=True)

    async def replace(self, key: str, value: bytes, expires_at: float, now: float, prefix: bytes) -> bool:
        async def write(db: asyncpg.Connection) -> bool:  # the UPDATE locks the row: a delete waits, or was first
            query = (
                "UPDATE parsegate_records SET value = $2, expires_at = $3 "
                f"WHERE key = $1 AND expires_at > $4 AND {_STARTS.format(5)}"
            )
            if await db.execute(query, key, value, expires_at, now, prefix) == "UPDATE 0":
                return False
            await db.execute("UPDATE parsegate_items SET expires_at = $1 WHERE key = $2", expires_at, key)
            return True

        return await self._run(write, writes=True)

    async def delete(self, key: str, prefix: bytes) -> bool:
        # the record first: its row lock orders this delete with a replace or an append of the key; the
        # items' DELETE, a statement after it, then sees the items of an append that committed first
        async def drop(db: asyncpg.Connection) -> bool:
            query = f"DELETE FROM parsegate_records WHERE key = $1 AND {_STARTS.format(2)}"
            if await db.execute(query, key, prefix) == "DELETE 0":
                return False
            await db.execute("DELETE FROM parsegate_items WHERE key = $1", key)
            return True

        return await self._run(drop, writes=True)

    async def append(
        self,
        key: str,
        items: list[tuple[str, bytes]],
        expires_at: float,
        now: float,
        max_items: int | None = None,
        record: tuple[str, bytes] | None = None,
    ) -> bool:
        async def add(db: asyncpg.Connection) -> bool:
            await db.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", _ITEMS_LOCK, key)  # one add at a time
            present = "SELECT 1 FROM parsegate_records WHERE key = $1 AND expires_at > $2 FOR UPDATE"
            if await db.fetchval(present, key, now) is None:  # FOR UPDATE: a delete waits for this add, or was first
                return False
            ids = [item_id for item_id, _ in items]
            repeated = await db.fetchval(
                "SELECT item_id FROM parsegate_items WHERE key = $1 AND item_id = ANY($2::text[]) LIMIT 1", key, ids
            )
            if repeated is not None:
                raise RepeatedItemId(repeated)
            if max_items is not None:
                held = await db.fetchval("SELECT count(*) FROM parsegate_items WHERE key = $1", key)
                if held + len(items) > max_items:
                    raise TooManyItems(held)
            await db.executemany(
                "INSERT INTO parsegate_items (key, item_id, value, expires_at) VALUES ($1, $2, $3, $4)",
                [(key, item_id, value, expires_at) for item_id, value in items],
            )
            await db.execute("UPDATE parsegate_records SET expires_at = $1 WHERE key = $2", expires_at, key)
            await db.execute("UPDATE parsegate_items SET expires_at = $1 WHERE key = $2", expires_at, key)
            if record is not None:  # in the same transaction: it fails, and the items were never added
                await _put(db, *record, expires_at)
            return True

        return await self._run(add, writes=True)

    async def items(self, key: str) -> list[bytes]:
        async def read(db: asyncpg.Connection) -> list[bytes]:
            rows = await db.fetch("SELECT value FROM parsegate_items WHERE key = $1 ORDER BY seq", key)
            return [row["value"] for row in rows]

        return await self._run(read, writes=False)

    async def item(self, key: str, item_id: str) -> bytes | None:
        return await self._run(
            lambda db: db.fetchval("SELECT value FROM parsegate_items WHERE key = $1 AND item_id = $2", key, item_id),
            writes=False,
        )

    async def remove(self, key: str, item_id: str) -> bool:
        return await self._run(
            lambda db: self._deleted(db, "DELETE FROM parsegate_items WHERE key = $1 AND item_id = $2", key, item_id),
            writes=True,
        )

    @staticmethod
    async def _deleted(db: asyncpg.Connection, query: str, *args: object) -> bool:
        return await db.execute(query, *args) != "DELETE 0"

    async def purge(self, now: float) -> None:
        async def drop(db: asyncpg.Connection) -> None:
            await db.execute("DELETE FROM parsegate_records WHERE expires_at <= $1", now)
            await db.execute("DELETE FROM parsegate_items WHERE expires_at <= $1", now)

        await self._run(drop, writes=True, seconds=PURGE_TIMEOUT)

    async def check(self) -> None:
        await self._run(lambda db: db.fetchval("SELECT 1"), writes=False)

    async def close(self) -> None:
        """Close the pools, each within its deadline: a server that does not
        answer has its connections closed at once."""
        for writes, pool in self._pools.items():
            try:
                await asyncio.wait_for(pool.close(), self._timeouts["write_timeout" if writes else "read_timeout"])
            except TimeoutError:
                pool.terminate()
        self._pools.clear()
