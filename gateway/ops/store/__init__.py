"""Where the Responses API's state is kept (docs/state.md): `open_store`
gives the configured backend's `ResponseStore`, or None for
`store.backend: none`; `check_store` asks it a trivial question at
start-up. Redis and PostgreSQL need their optional extras
(`parsegate[store-redis]`, `parsegate[store-postgres]`)."""

from __future__ import annotations

from gateway.ops.store.records import Chain, ResponseStore, StoredResponse
from gateway.ops.store.storage import RepeatedItemId, Storage, StoreUnavailable, TooManyItems
from gateway.ops.store_config import StoreConfig

__all__ = [
    "Chain",
    "RepeatedItemId",
    "ResponseStore",
    "StoreUnavailable",
    "StoredResponse",
    "TooManyItems",
    "check_store",
    "open_store",
]

_EXTRAS = {"redis": "store-redis", "postgres": "store-postgres"}


def _storage(config: StoreConfig) -> Storage:
    if config.backend == "redis":
        from gateway.ops.store.redis_store import RedisStorage

        return RedisStorage(config.location, config.read_timeout, config.write_timeout)
    if config.backend == "postgres":
        from gateway.ops.store.postgres_store import PostgresStorage

        return PostgresStorage(config.location, config.read_timeout, config.write_timeout)
    from gateway.ops.store.sqlite_store import SqliteStorage

    return SqliteStorage(config.location, config.write_timeout, config.read_timeout)


def _opened(config: StoreConfig) -> Storage:
    try:
        return _storage(config)
    except ImportError as error:
        extra = _EXTRAS[config.backend]
        raise RuntimeError(
            f"store.backend {config.backend} needs the {error.name!r} package: pip install 'parsegate[{extra}]'"
        ) from None


def open_store(config: StoreConfig) -> ResponseStore | None:
    """The store `config` names; nothing connects until the first request that needs it."""
    if config.backend == "none":
        return None
    return ResponseStore(_opened(config), config.retention_days)


async def check_store(config: StoreConfig) -> None:
    """Connect to the store `config` names and ask it a trivial question,
    within `store.read_timeout`, then let it go: `StoreUnavailable` naming
    the backend and what failed (no password) when it cannot answer, so
    that `parsegate serve` stops at start-up instead of answering 503 to
    every request that needs the store."""
    if config.backend == "none":
        return
    storage = _opened(config)
    try:
        await storage.check()
    except StoreUnavailable as error:
        raise StoreUnavailable(f"store.backend {config.backend} cannot be used: {error}") from None
    finally:
        await storage.close()
