"""config.yaml's `store:` section: where stored responses and conversations
are kept (docs/state.md)."""

from __future__ import annotations

import importlib
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from gateway.ops.config_section import Section
from gateway.ops.env_overlay import expand_variables

_STORE_SCHEMES = {"redis": ("redis://", "rediss://", "unix://"), "postgres": ("postgresql://", "postgres://")}
_CLIENTS = {"redis": ("redis.asyncio", "store-redis"), "postgres": ("asyncpg", "store-postgres")}
DEFAULT_SQLITE_FILE = "parsegate-store.db"


class StoreConfig(Section):
    """Where stored responses and conversations are kept (docs/state.md)."""

    backend: Literal["sqlite", "redis", "postgres", "none"] = "sqlite"
    url: str | None = Field(default=None, repr=False)  # may hold a password
    retention_days: float = Field(default=30.0, gt=0)
    write_timeout: float = Field(default=5.0, gt=0)  # seconds a store write may take, waits included, then a 503
    read_timeout: float = Field(default=5.0, gt=0)  # seconds a store read may take, waits included, then a 503

    @field_validator("url")
    @classmethod
    def _expanded(cls, url: str) -> str:
        return expand_variables(url)

    @model_validator(mode="after")
    def _url_fits_backend(self) -> StoreConfig:
        schemes = _STORE_SCHEMES.get(self.backend)
        if schemes and not (self.url or "").startswith(schemes):
            raise ValueError(f"store.url must be a {' or '.join(schemes)} URL for store.backend {self.backend}")
        if schemes:
            _check_ports(self.url or "")
            _check_client(self.backend)
        return self

    @property
    def location(self) -> str:
        """The store's URL, or the SQLite file's path."""
        return self.url or DEFAULT_SQLITE_FILE


def _check_ports(url: str) -> None:
    """A port in the URL (each host's, for PostgreSQL's several) must be a
    number from 1 to 65535: checked with the config, where the client
    would fail on every request."""
    hosts = urlsplit(url).netloc.rpartition("@")[2]
    for host in hosts.split(","):
        try:
            port = urlsplit(f"//{host}").port
        except ValueError:
            port = 0
        if port == 0:
            shown = host.rpartition(":")[2] if not host.endswith("]") else ""
            raise ValueError(f"store.url has a port that is not a number from 1 to 65535: {shown!r}")


def _check_client(backend: str) -> None:
    """The backend's client package must be installed (its optional extra)."""
    package, extra = _CLIENTS[backend]
    try:
        importlib.import_module(package)
    except ImportError as error:
        raise ValueError(
            f"store.backend {backend} needs the {error.name or package!r} package: pip install 'parsegate[{extra}]'"
        ) from None
