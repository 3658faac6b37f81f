"""config.yaml: the served models, their backends and parsers (CONTRACT.md).

Everything is checked at start-up: unknown keys, malformed values, unknown
parser names and duplicate model names are errors naming the key and what
it accepts, so a typo never surfaces as a surprise at request time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from parsers import reasoning_parser_names, tool_call_parser_names

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ConfigError(Exception):
    """The configuration cannot be used; the message is one line for humans."""


class _Section(BaseModel):
    """A config mapping: strict types, unknown keys name the allowed ones,
    and a key left empty in YAML (`key:`) means "not set"."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: object) -> object:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                allowed = ", ".join(cls.model_fields)
                raise ValueError(f"unknown key {unknown[0]!r}; allowed keys: {allowed}")
            return {key: value for key, value in data.items() if value is not None}
        return data


def _expand_env(value: str) -> str:
    """Replace every `${VAR}` with the environment's value; unset is an error."""

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        return os.environ[name]

    return _ENV_REFERENCE.sub(lookup, value)


class ServerConfig(_Section):
    host: str = "0.0.0.0"
    port: int = Field(default=8080, ge=1, le=65535)
    api_keys: list[str] = Field(default=[], repr=False)
    log_format: Literal["text", "json"] = "text"
    opentelemetry: bool = False

    @field_validator("opentelemetry")
    @classmethod
    def _tracing_installed(cls, enabled: bool) -> bool:
        from gateway.tracing import tracing_installed

        if enabled and not tracing_installed():
            raise ValueError("needs the OpenTelemetry instrumentations: pip install 'parsegate[otel]'")
        return enabled

    @field_validator("api_keys")
    @classmethod
    def _expand_keys(cls, keys: list[str]) -> list[str]:
        expanded = [_expand_env(key) for key in keys]
        if not all(expanded):
            raise ValueError("API keys must be non-empty strings")
        return expanded


class BackendConfig(_Section):
    """Where a model is served: an OpenAI-compatible raw-text server (`url`)
    or the built-in demo backend (`demo: true`)."""

    url: str | None = None
    demo: bool = False
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout: float = Field(default=600.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
        return url.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _expand_key(cls, key: str) -> str:
        return _expand_env(key)

    @model_validator(mode="after")
    def _one_target(self) -> BackendConfig:
        if (self.url is None) == (not self.demo):
            raise ValueError("set exactly one of 'url' (a backend server) or 'demo: true' (the built-in demo)")
        return self


class ModelConfig(_Section):
    name: str = Field(min_length=1)
    backend: BackendConfig
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None

    @field_validator("reasoning_parser")
    @classmethod
    def _known_reasoning_parser(cls, name: str) -> str:
        return _known_name(name, "reasoning", reasoning_parser_names())

    @field_validator("tool_call_parser")
    @classmethod
    def _known_tool_call_parser(cls, name: str) -> str:
        return _known_name(name, "tool-call", tool_call_parser_names())

    @property
    def upstream_model(self) -> str:
        """The model name sent to the backend."""
        return self.backend.model or self.name


def _known_name(name: str, kind: str, allowed: list[str]) -> str:
    if name not in allowed:
        raise ValueError(f"unknown {kind} parser {name!r}; allowed: {', '.join(allowed)}")
    return name


class Config(_Section):
    server: ServerConfig = ServerConfig()
    models: list[ModelConfig] = Field(min_length=1)

    @field_validator("models")
    @classmethod
    def _unique_names(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        seen: set[str] = set()
        for model in models:
            if model.name in seen:
                raise ValueError(f"duplicate model name {model.name!r}; model names must be unique")
            seen.add(model.name)
        return models


def load_config(path: str | Path) -> Config:
    """Read and validate a config file; raise ConfigError with a one-line reason."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {_one_line(str(error))}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with a 'models' list")
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_errors(error)}") from None


def describe_errors(error: ValidationError) -> str:
    """pydantic errors as `key.path: reason`, joined on one line."""
    parts = []
    for item in error.errors(include_url=False):
        where = key_path(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return " | ".join(parts)


def key_path(loc: tuple[str | int, ...]) -> str:
    """A pydantic error location as `models[0].backend.url`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _one_line(text: str) -> str:
    return " ".join(text.split())
