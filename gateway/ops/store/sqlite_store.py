"""The default store: one SQLite file (Python's sqlite3), on threads of
its own so the event loop never waits on the disk. WAL journal, so readers
do not wait on the writer, and several processes on one machine may share
the file (https://www.sqlite.org/wal.html). Writes go one at a time
through one connection on one thread; reads through connections of their
own on other threads, so that a read never waits behind a write that waits
for the file's write lock. A write is a transaction that takes the write
lock at its start (`BEGIN IMMEDIATE`), so that what it checks holds until
it commits; a read is one `SELECT`, a transaction of its own on the last
commit, which takes no lock a writer holds
(https://www.sqlite.org/lang_transaction.html)."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from gateway.ops.store.storage import RepeatedItemId, Storage, StoreUnavailable, TooManyItems, linked_key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, item_id TEXT NOT NULL,
    value BLOB NOT NULL, expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS items_by_key ON items (key, seq);
CREATE INDEX IF NOT EXISTS items_by_id ON items (key, item_id);
CREATE INDEX IF NOT EXISTS records_by_expiry ON records (expires_at);
CREATE INDEX IF NOT EXISTS items_by_expiry ON items (expires_at);
"""

PURGE_BATCH_ROWS = 1000  # rows a purge deletes per transaction: about 20 ms of 2 KB records
_PURGES = (
    "DELETE FROM records WHERE rowid IN (SELECT rowid FROM records WHERE expires_at <= ? LIMIT ?)",
    "DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE expires_at <= ? LIMIT ?)",
)

_STARTS = "substr(value, 1, length(?)) = ?"  # the value starts with a blob (the owner's prefix), compared as bytes
READERS = 2  # threads, each with its own connection, that reads go through
_IN_MEMORY = ("", ":memory:")  # a database of one connection's own: reads go through the writer's
_Result = TypeVar("_Result")


def _put(db: sqlite3.Connection, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
    db.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?)", (key, value, expires_at))
    db.execute("UPDATE items SET expires_at = ? WHERE key = ?", (expires_at, key))
    db.executemany("UPDATE records SET expires_at = ? WHERE key = ?", [(expires_at, other) for other in renew])


class SqliteStorage(Storage):
    def __init__(self, path: str, write_timeout: float = 5.0, read_timeout: float = 5.0) -> None:
        self._path = path
        self._timeout = write_timeout  # how long a write may wait for the file's write lock, from when it is asked
        self._read_timeout = read_timeout  # how long a read may wait for a lock (a WAL reader rarely needs one)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parsegate-store")
        self._db: sqlite3.Connection | None = None
        self._shared = path not in _IN_MEMORY  # a file other connections may write: reads have their own
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="parsegate-store-read")
        self._reader = threading.local()  # each reader thread's connection
        self._reader_dbs: list[sqlite3.Connection] = []

    def _connect(self, timeout: float) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=timeout)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)  # takes no lock once the tables are there
        return db

    async def _run(self, work: Callable[[sqlite3.Connection], _Result], *, writes: bool = True) -> _Result:
        """`work`'s result: on the store's thread in a write transaction,
        which waits for the write lock until `write_timeout` after now at
        the latest, however long the writes before it waited; or (`writes`
        false: one `SELECT`) as it is, on a reader's thread, answered (or
        failed) within `read_timeout` however many reads are queued before it."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self._timeout
        try:
            if writes:
                return await loop.run_in_executor(self._thread, self._in_thread, work, writes, deadline)
            async with asyncio.timeout(self._read_timeout):  # queued behind other reads, it still answers in time
                if not self._shared:
                    return await loop.run_in_executor(self._thread, self._in_thread, work, writes, deadline)
                return await loop.run_in_executor(self._readers, self._read, work)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"the SQLite store {self._path} failed: {error}") from error
        except TimeoutError:
            message = (
                f"the SQLite store {self._path} did not answer within store.read_timeout ({self._read_timeout:g} s)"
            )
            raise StoreUnavailable(message) from None

    def _read(self, work: Callable[[sqlite3.Connection], _Result]) -> _Result:
        db: sqlite3.Connection | None = getattr(self._reader, "db", None)
        if db is None:
            db = self._reader.db = self._connect(self._read_timeout)
            self._reader_dbs.append(db)
        return work(db)

    def _in_thread(self, work: Callable[[sqlite3.Connection], _Result], writes: bool, deadline: float) -> _Result:
        if self._db is None:
            self._db = self._connect(self._timeout)
        db = self._db
        if not writes:
            return work(db)
        left = deadline - time.monotonic()
        if left <= 0:  # its time went by while the writes before it waited: the lock is not tried
            raise sqlite3.OperationalError(
                f"database is locked: the write waited its store.write_timeout of {self._timeout:g} s"
                " behind other writes waiting for the lock"
            )
        db.execute(f"PRAGMA busy_timeout = {math.ceil(left * 1000)}")  # the rest of its time, in ms
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return result

    async def get(self, key: str, now: float, prefix: bytes) -> bytes | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            row = db.execute(
                f"SELECT value FROM records WHERE key = ? AND expires_at > ? AND {_STARTS}", (key, now, prefix, prefix)
            ).fetchone()
            return row[0] if row else None

        return await self._run(read, writes=False)

    async def chain(self, key: str, now: float, prefix: bytes, most: int) -> list[bytes]:
        def read(db: sqlite3.Connection) -> list[bytes]:  # in-process: a point read per link, on one thread call
            found: list[bytes] = []
            link: str | None = key
            while link is not None and len(found) < most:
                row = db.execute(
                    f"SELECT value FROM records WHERE key = ? AND expires_at > ? AND {_STARTS}",
                    (link, now, prefix, prefix),
                ).fetchone()
                if row is None:
                    break
                found.append(row[0])
                link = linked_key(row[0], prefix)
            return found

        return await self._run(read, writes=False)

    async def put(self, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
        await self._run(lambda db: _put(db, key, value, expires_at, renew))

    async def replace(self, key: str, value: bytes, expires_at: float, now: float, prefix: bytes) -> bool:
        def write(db: sqlite3.Connection) -> bool:
            query = f"UPDATE records SET value = ?, expires_at = ? WHERE key = ? AND expires_at > ? AND {_STARTS}"
            if db.execute(query, (value, expires_at, key, now, prefix, prefix)).rowcount == 0:
                return False
            db.execute("UPDATE items SET expires_at = ? WHERE key = ?", (expires_at, key))
            return True

        return await self._run(write)

    async def delete(self, key: str, prefix: bytes) -> bool:
        def drop(db: sqlite3.Connection) -> bool:
            if db.execute(f"DELETE FROM records WHERE key = ? AND {_STARTS}", (key, prefix, prefix)).rowcount == 0:
                return False
            db.execute("DELETE FROM items WHERE key = ?", (key,))
            return True

        return await self._run(drop)

    async def append(
        self,
        key: str,
        items: list[tuple[str, bytes]],
        expires_at: float,
        now: float,
        max_items: int | None = None,
        record: tuple[str, bytes] | None = None,
    ) -> bool:
        def add(db: sqlite3.Connection) -> bool:  # BEGIN IMMEDIATE: no other write between the checks and the insert
            if not db.execute("SELECT 1 FROM records WHERE key = ? AND expires_at > ?", (key, now)).fetchone():
                return False
            for item_id, _ in items:
                if db.execute("SELECT 1 FROM items WHERE key = ? AND item_id = ?", (key, item_id)).fetchone():
                    raise RepeatedItemId(item_id)
            if max_items is not None:
                held = db.execute("SELECT count(*) FROM items WHERE key = ?", (key,)).fetchone()[0]
                if held + len(items) > max_items:
                    raise TooManyItems(held)
            db.executemany(
                "INSERT INTO items (key, item_id, value, expires_at) VALUES (?, ?, ?, ?)",
                [(key, item_id, value, expires_at) for item_id, value in items],
            )
            db.execute("UPDATE records SET expires_at = ? WHERE key = ?", (expires_at, key))
            db.execute("UPDATE items SET expires_at = ? WHERE key = ?", (expires_at, key))
            if record is not None:  # in the same transaction: it fails, and the items were never added
                _put(db, *record, expires_at)
            return True

        return await self._run(add)

    async def items(self, key: str) -> list[bytes]:
        def read(db: sqlite3.Connection) -> list[bytes]:
            return [row[0] for row in db.execute("SELECT value FROM items WHERE key = ? ORDER BY seq", (key,))]

        return await self._run(read, writes=False)

    async def item(self, key: str, item_id: str) -> bytes | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            row = db.execute("SELECT value FROM items WHERE key = ? AND item_id = ?", (key, item_id)).fetchone()
            return row[0] if row else None

        return await self._run(read, writes=False)

    async def remove(self, key: str, item_id: str) -> bool:
        def drop(db: sqlite3.Connection) -> bool:
            return db.execute("DELETE FROM items WHERE key = ? AND item_id = ?", (key, item_id)).rowcount > 0

        return await self._run(drop)

    async def purge(self, now: float) -> None:
        """Delete what expired, `PURGE_BATCH_ROWS` rows a transaction: the
        store's thread and the file's write lock go to other writes between
        batches. In one transaction, 36,000 expired records held the lock
        for 0.8 s on a 2-vCPU host; an hour of a busier store's, for longer
        than the other workers' writes wait for it (`store.write_timeout`,
        5 s by default)."""
        for statement in _PURGES:

            def drop(db: sqlite3.Connection, statement: str = statement) -> int:
                return db.execute(statement, (now, PURGE_BATCH_ROWS)).rowcount

            while await self._run(drop) == PURGE_BATCH_ROWS:
                pass

    async def check(self) -> None:
        await self._run(lambda db: db.execute("SELECT 1").fetchone(), writes=False)

    async def close(self) -> None:
        def close_db() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        await asyncio.get_running_loop().run_in_executor(self._thread, close_db)
        self._thread.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        for db in self._reader_dbs:
            db.close()
        self._reader_dbs.clear()
