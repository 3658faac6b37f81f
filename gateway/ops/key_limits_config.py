"""Per-key limits in the config (docs/configuration.md, "Per-key limits"):
`server.key_limits` maps a key's name (or `default`, for every key without
an entry of its own) to its `KeyLimits`, and a line of
`server.api_keys_file` may name its key and carry its limits:

    sk-plain-key
    sk-alice-key  name=alice  requests_per_minute=60  tokens_per_minute=100000  concurrent_streams=4

A plain line is a key with no limits of its own, as before. A key without
a name is named `key-` and the first 8 hex digits of its SHA-256 (in
metrics and logs: the key itself never is).

Per model, in config.yaml only, by the model name the client asks for, as
LiteLLM's keys carry them (`model_rpm_limit`, `model_tpm_limit`,
https://docs.litellm.ai/docs/proxy/rate_limits), with
`model_concurrent_streams` beside them; a request counts against both its
key's limits and its model's."""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import Field, ValidationError

from gateway.ops.config_section import Section

DEFAULT_LIMITS = "default"  # the `key_limits` entry for keys without their own
ANONYMOUS = "anonymous"  # the name of every client when no key is configured


Limit = Annotated[int, Field(ge=1)]
LINE_LIMITS = ("requests_per_minute", "tokens_per_minute", "concurrent_streams")  # what a file line may carry


class KeyLimits(Section):
    """One key's limits; each unset one is no limit."""

    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)  # prompt plus completion, from the backend's usage
    concurrent_streams: int | None = Field(default=None, ge=1)  # requests in flight; a stream until it ends
    model_rpm_limit: dict[str, Limit] = {}  # by model name: requests per minute of this key's on that model
    model_tpm_limit: dict[str, Limit] = {}
    model_concurrent_streams: dict[str, Limit] = {}

    @property
    def is_set(self) -> bool:
        limits = (self.requests_per_minute, self.tokens_per_minute, self.concurrent_streams)
        return any(limit is not None for limit in limits) or bool(self.models)

    @property
    def models(self) -> frozenset[str]:
        """The models this key has limits of its own on."""
        return frozenset((*self.model_rpm_limit, *self.model_tpm_limit, *self.model_concurrent_streams))

    def on_model(self, model: str) -> KeyLimits | None:
        """This key's limits on `model` alone, or None when it has none there."""
        if model not in self.models:
            return None
        return KeyLimits(
            requests_per_minute=self.model_rpm_limit.get(model),
            tokens_per_minute=self.model_tpm_limit.get(model),
            concurrent_streams=self.model_concurrent_streams.get(model),
        )


def default_key_name(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:8]


def key_line(line: str, number: int) -> tuple[str, str | None, dict[str, int]]:
    """One line of `api_keys_file`: its key, its name (if given) and its limits."""
    key, *options = line.split()
    name: str | None = None
    limits: dict[str, int] = {}
    for option in options:
        field, sep, value = option.partition("=")
        if not sep or not value:
            raise ValueError(f"api_keys_file line {number}: {option!r} is not name=value")
        if field == "name":
            name = value
        elif field in LINE_LIMITS and value.isdigit():
            limits[field] = int(value)
        else:
            allowed = ", ".join(["name", *LINE_LIMITS])
            raise ValueError(f"api_keys_file line {number}: {option!r}: takes {allowed}, each limit a whole number")
    try:
        KeyLimits.model_validate(limits)
    except ValidationError as error:
        raise ValueError(f"api_keys_file line {number}: {error.errors()[0]['msg']}") from None
    return key, name, limits
