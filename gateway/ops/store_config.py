"""config.yaml's `store:` section: where stored responses and conversations
are kept (docs/state.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.ops.config_section import Section
from gateway.ops.env_overlay import expand_variables

_STORE_SCHEMES = {"redis": ("redis://", "rediss://", "unix://"), "postgres": ("postgresql://", "postgres://")}
DEFAULT_SQLITE_FILE = "parsegate-store.db"


class StoreConfig(Section):
    """Where stored responses and conversations are kept (docs/state.md)."""

    backend: Literal["sqlite", "redis", "postgres", "none"] = "sqlite"
    url: str | None = Field(default=None, repr=False)  # may hold a password
    retention_days: float = Field(default=30.0, gt=0)

    @field_validator("url")
    @classmethod
    def _expanded(cls, url: str) -> str:
        return expand_variables(url)

    @model_validator(mode="after")
    def _url_fits_backend(self) -> StoreConfig:
        schemes = _STORE_SCHEMES.get(self.backend)
        if schemes and not (self.url or "").startswith(schemes):
            raise ValueError(f"store.url must be a {' or '.join(schemes)} URL for store.backend {self.backend}")
        return self

    @property
    def location(self) -> str:
        """The store's URL, or the SQLite file's path."""
        return self.url or DEFAULT_SQLITE_FILE
