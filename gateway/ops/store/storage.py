"""What every store backend offers: records (one value per key) and item
lists (values in insertion order, each under an item id, kept under the
key of the record they belong to), all with an expiry time. The response
store (records.py) builds responses and conversations on these; each
backend (SQLite, Redis, PostgreSQL) implements them atomically, so a reader
never sees half of a write (docs/state.md)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class StoreUnavailable(Exception):
    """The store cannot be reached or written; the message says why, without secrets."""


class Storage(ABC):
    @abstractmethod
    async def get(self, key: str, now: float) -> bytes | None:
        """The record's value unless missing or expired."""

    @abstractmethod
    async def put(self, key: str, value: bytes, expires_at: float) -> None:
        """Write the record (replacing it) and move its items' expiry to `expires_at`."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove the record and its items; whether the record was there."""

    @abstractmethod
    async def append(self, key: str, items: list[tuple[str, bytes]], expires_at: float) -> None:
        """Add (item id, value) pairs after the key's items, and move the
        record's and all its items' expiry to `expires_at`, in one write."""

    @abstractmethod
    async def items(self, key: str) -> list[bytes]:
        """The key's item values, oldest first."""

    @abstractmethod
    async def remove(self, key: str, item_id: str) -> bool:
        """Remove one item; whether it was there."""

    @abstractmethod
    async def purge(self, now: float) -> None:
        """Delete what expired before `now`."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads."""
