"""config.yaml's `server:` section: where the gateway listens, its keys and
limits (docs/configuration.md)."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.ops.config_section import Section
from gateway.ops.env_overlay import expand_variables, from_variables
from gateway.ops.key_limits_config import ANONYMOUS, DEFAULT_LIMITS, KeyLimits, default_key_name, key_line
from gateway.ops.request_bounds import RequestBounds
from gateway.ops.sidecar_config import SidecarConfig

SEND_TIMEOUT = 60.0  # seconds a write to a client may wait before its stream is cut (api/sse.py)


def _seal_key(key: str) -> str:
    """A seal key, its variables expanded: 16 characters or more."""
    expanded = expand_variables(key)
    if len(expanded) < 16:
        raise ValueError(f"seal keys must have at least 16 characters{from_variables(key)}")
    return expanded


class ServerConfig(Section, RequestBounds):
    host: str = "0.0.0.0"
    port: int = Field(default=8080, ge=1, le=65535)
    api_keys: list[str] = Field(default=[], repr=False)
    api_keys_file: str | None = None
    api_key_names: dict[str, str] = Field(default={}, repr=False)  # key -> its name, from api_keys_file
    key_limits: dict[str, KeyLimits] = {}  # by key name, or `default` (key_limits_config.py)
    metrics_auth: bool = False
    openapi_public: bool = False  # true: /openapi.json wants no key even with api_keys set
    responses_websocket: bool = True  # false: a WebSocket upgrade on /v1/responses gets 426, and the client uses HTTP
    max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1)
    max_buffered_chars: int = Field(default=1024 * 1024, ge=1)
    max_concurrent_requests: int = Field(default=1024, ge=1)
    max_background_responses: int = Field(default=64, ge=1)  # running at once (api/responses_background.py)
    shutdown_timeout: float = Field(default=30.0, ge=0)
    send_timeout: float = Field(default=SEND_TIMEOUT, gt=0)
    log_format: Literal["text", "json"] = "text"
    opentelemetry: bool = False
    overhead_header: bool = False  # true: X-Parsegate-Overhead-Ms on every response (ops/overhead.py)
    compaction_prompt: str | None = Field(default=None, min_length=1)  # None: api/compaction.py's SUMMARY_PROMPT
    seal_key: str | None = Field(default=None, repr=False)  # None: a random key per process
    previous_seal_keys: list[str] = Field(default=[], repr=False)  # still unseal, never seal: a key's rotation
    sidecar: SidecarConfig = SidecarConfig()  # headers and the engine's /metrics for llm-d (sidecar_config.py)

    @model_validator(mode="before")
    @classmethod
    def _keys_from_file(cls, data: object) -> object:
        """Keys from `api_keys_file` (one a line, with its name and limits
        if given; blank lines and `#` comments skipped) join `api_keys`."""
        if not isinstance(data, dict) or not isinstance(data.get("api_keys_file"), str):
            return data
        path = data["api_keys_file"]
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise ValueError(f"api_keys_file: cannot read {path}: {error.strerror or error}") from None
        entries = [
            key_line(line.strip(), number)
            for number, line in enumerate(lines, 1)
            if line.strip() and not line.strip().startswith("#")
        ]
        names = {expand_variables(key): name or default_key_name(key) for key, name, _ in entries}
        limits = {name or default_key_name(key): given for key, name, given in entries if given}
        listed = data.get("api_keys") or []
        return {
            **data,
            "api_keys": [*listed, *(key for key, _, _ in entries)] if isinstance(listed, list) else listed,
            "api_key_names": {**data.get("api_key_names", {}), **names},
            "key_limits": {**data.get("key_limits", {}), **limits},
        }

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, keys: object) -> object:
        return [key.strip() for key in keys.split(",")] if isinstance(keys, str) else keys

    @field_validator("opentelemetry")
    @classmethod
    def _tracing_installed(cls, enabled: bool) -> bool:
        from gateway.ops.tracing import tracing_installed

        if enabled and not tracing_installed():
            raise ValueError("needs the OpenTelemetry instrumentations: pip install 'parsegate[otel]'")
        return enabled

    @field_validator("seal_key")
    @classmethod
    def _expand_seal_key(cls, key: str | None) -> str | None:
        return None if key is None else _seal_key(key)

    @field_validator("previous_seal_keys")
    @classmethod
    def _expand_previous_seal_keys(cls, keys: list[str]) -> list[str]:
        return [_seal_key(key) for key in keys]

    @field_validator("api_keys")
    @classmethod
    def _expand_keys(cls, keys: list[str]) -> list[str]:
        expanded = [expand_variables(key) for key in keys]
        empty = [key for key, value in zip(keys, expanded, strict=True) if not value]
        if empty:
            raise ValueError(f"API keys must be non-empty strings{from_variables(empty[0])}")
        return expanded

    @cached_property
    def _limits_by_digest(self) -> dict[bytes, tuple[str, KeyLimits]]:
        """Each key's SHA-256 -> its name and limits (keys without any left out)."""
        default = self.key_limits.get(DEFAULT_LIMITS, KeyLimits())
        table = {}
        for key in self.api_keys:
            name = self.api_key_names.get(key) or default_key_name(key)
            limits = self.key_limits.get(name, default)
            if limits.is_set:
                table[hashlib.sha256(key.encode()).digest()] = (name, limits)
        return table

    def limits_of(self, key: bytes | None) -> tuple[str, KeyLimits] | None:
        """The name and limits of the client holding `key`; None when it
        has none (or holds no configured key: auth answers it). Without
        configured keys every client is one, `anonymous`, with the
        `default` limits."""
        if not self.key_limits:
            return None
        if not self.api_keys:
            default = self.key_limits.get(DEFAULT_LIMITS)
            return (ANONYMOUS, default) if default is not None and default.is_set else None
        return self._limits_by_digest.get(hashlib.sha256(key or b"").digest())
