"""Where the Responses API's state is kept (docs/state.md): `open_store`
gives the configured backend's `ResponseStore`, or None for
`store.backend: none`. Redis and PostgreSQL need their optional extras
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
    "open_store",
]

_EXTRAS = {"redis": "store-redis", "postgres": "store-postgres"}


def _storage(config: StoreConfig) -> Storage:
    if config.backend == "redis":
        from gateway.ops.store.redis_store import RedisStorage

        return RedisStorage(config.location)
    if config.backend == "postgres":
        from gateway.ops.store.postgres_store import PostgresStorage

        return PostgresStorage(config.location)
    from gateway.ops.store.sqlite_store import SqliteStorage

    return SqliteStorage(config.location, config.write_timeout)


def open_store(config: StoreConfig) -> ResponseStore | None:
    """The store `config` names; nothing connects until the first request that needs it."""
    if config.backend == "none":
        return None
    try:
        storage = _storage(config)
    except ImportError as error:
        extra = _EXTRAS[config.backend]
        raise RuntimeError(
            f"store.backend {config.backend} needs the {error.name!r} package: pip install 'parsegate[{extra}]'"
        ) from None
    return ResponseStore(storage, config.retention_days)
