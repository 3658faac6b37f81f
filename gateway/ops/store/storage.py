"""What every store backend offers: records (one value per key) and item
lists (values in insertion order, each under an item id, kept under the
key of the record they belong to), all with an expiry time. The response
store (records.py) builds responses and conversations on these; each
backend (SQLite, Redis, PostgreSQL) implements them atomically, so a reader
never sees half of a write (docs/state.md).

A record may follow another (a response the one it continued): its value
goes on, right after its owner's prefix, with `"link":"KEY",` naming the
record it follows (a key holds no `"` or `\\`, and is under 1,000 bytes).
`chain` walks these links inside the store, in one call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

LINK = b'"link":"'  # what a record that follows another goes on with after its owner's prefix, then the key and '"'


def linked_key(value: bytes, prefix: bytes) -> str | None:
    """The key of the record that `value` (starting with `prefix`) follows, if any."""
    start = len(prefix) + len(LINK)
    if value[len(prefix) : start] != LINK:
        return None
    return value[start : value.index(b'"', start)].decode()


class StoreUnavailable(Exception):
    """The store cannot be reached or written, or did not answer within its
    deadline (`store.read_timeout`, `store.write_timeout`); the message says
    why, without secrets."""


class RepeatedItemId(Exception):
    """An append would give a key two items of one id; nothing was added."""

    def __init__(self, item_id: str) -> None:
        super().__init__(item_id)
        self.item_id = item_id


class TooManyItems(Exception):
    """An append would put more than its bound of items under a key; nothing was added."""

    def __init__(self, held: int) -> None:
        super().__init__(held)
        self.held = held  # the items the key holds


class Storage(ABC):
    @abstractmethod
    async def get(self, key: str, now: float, prefix: bytes) -> bytes | None:
        """The record's value unless missing, expired, or not starting with
        `prefix` (its owner's): compared in the store, so another owner's
        record is neither sent nor decoded."""

    @abstractmethod
    async def chain(self, key: str, now: float, prefix: bytes, most: int) -> list[bytes]:
        """The record's value and those of the records it follows, newest
        first, each read as `get` reads it: the walk stops at a record that
        follows none, before one that is missing, expired or not starting
        with `prefix`, or after `most` records."""

    @abstractmethod
    async def put(self, key: str, value: bytes, expires_at: float, renew: Sequence[str] = ()) -> None:
        """Write the record (replacing it) and move its items' expiry, and
        that of the records `renew` names (the chain it follows), to
        `expires_at`, in one write."""

    @abstractmethod
    async def replace(self, key: str, value: bytes, expires_at: float, now: float, prefix: bytes) -> bool:
        """Replace the record's value, and move its and its items' expiry to
        `expires_at`, if it is there (not expired, its value starting with
        `prefix`), in one write: a record deleted meanwhile stays deleted.
        Whether it was there."""

    @abstractmethod
    async def delete(self, key: str, prefix: bytes) -> bool:
        """Remove the record and its items if its value starts with `prefix`
        (its owner's), in one write; whether it was there."""

    @abstractmethod
    async def append(
        self,
        key: str,
        items: list[tuple[str, bytes]],
        expires_at: float,
        now: float,
        max_items: int | None = None,
        record: tuple[str, bytes] | None = None,
    ) -> bool:
        """Add (item id, value) pairs after the key's items, and move the
        record's and all its items' expiry to `expires_at`, in one write,
        if the record is there (not expired): whether it was, nothing
        written if not, so that items never outlive a record deleted
        meanwhile. `RepeatedItemId` (and nothing written) when an id is
        already among the key's items, `TooManyItems` when the key would
        hold more than `max_items`. The ids of `items` are distinct.
        `record` (another key and its value) is written as `put` writes it,
        in the same write, and only with the items: both or neither."""

    @abstractmethod
    async def items(self, key: str) -> list[bytes]:
        """The key's item values, oldest first."""

    @abstractmethod
    async def item(self, key: str, item_id: str) -> bytes | None:
        """One item's value, unless missing."""

    @abstractmethod
    async def remove(self, key: str, item_id: str) -> bool:
        """Remove one item; whether it was there."""

    @abstractmethod
    async def purge(self, now: float) -> None:
        """Delete what expired before `now`."""

    @abstractmethod
    async def check(self) -> None:
        """Connect and ask the store a trivial question, within the read
        deadline: `StoreUnavailable` if it cannot answer (at start-up)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads."""
