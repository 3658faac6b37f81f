"""A model entry's `backend:` section: where and how its server is reached
(docs/configuration.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gateway.ops.config_section import Section
from gateway.ops.env_overlay import expand_variables, from_variables
from gateway.ops.servers import ServerKind

# A non-streamed answer, `GET /props` or a model listing is read whole
# before it is parsed: 64 MiB decoded is far over a long answer with
# `logprobs` (about 1 KB a token with 20 `top_logprobs`), and bounds what
# a gzip body (a thousand to one) or one that never ends makes the gateway hold.
MAX_ANSWER_BYTES = 64 << 20

# The headers coding agents name their session in: Claude Code's
# `x-claude-code-session-id`, Codex's `session_id` (and the dashed spelling
# proxies keep), and the generic `x-session-affinity` of llm-d and SGLang's router.
SESSION_HEADERS = ["x-claude-code-session-id", "session_id", "session-id", "x-session-affinity"]


class LoadGauges(Section):
    """`backend.load_gauges`: the engines' own load gauges, scraped from each
    URL's `/metrics` every `interval` seconds, weigh its load when the least
    loaded URL is chosen (upstream/load_gauges.py)."""

    interval: float = Field(default=5.0, gt=0)  # seconds between two scrapes of every URL
    timeout: float = Field(default=2.0, gt=0)  # seconds one scrape may take; then its URL counts no gauges
    cache_weight: float = Field(default=2.0, ge=0)  # load of a full KV cache (usage 1.0), in requests
    max_bytes: int = Field(default=8 << 20, ge=1)  # a scrape's text at most


class BackendConfig(Section):
    """Where a model is served: an OpenAI-compatible raw-text server (`url`)
    or the built-in demo backend (`demo: true`)."""

    url: str | None = None
    demo: bool = False
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout: float = Field(default=600.0, gt=0)
    connect_timeout: float | None = Field(default=None, gt=0)
    first_byte_timeout: float | None = Field(default=None, gt=0)
    idle_timeout: float | None = Field(default=None, gt=0)
    max_answer_bytes: int = Field(default=MAX_ANSWER_BYTES, ge=1)  # a whole (not streamed) answer, decoded
    urls: list[str] | None = Field(default=None, min_length=1)
    retries: int = Field(default=2, ge=0, le=10)
    breaker_failures: int = Field(default=3, ge=1)
    breaker_cooldown: float = Field(default=30.0, gt=0)
    routing: Literal["session", "round_robin"] = "session"  # over several `urls` (balancer.py)
    session_headers: list[str] = Field(default_factory=lambda: list(SESSION_HEADERS))
    # times the mean load; `never`: a session never leaves its URL for load (null, as any empty key, is the default)
    session_overload: Annotated[float, Field(gt=1)] | Literal["never"] = 1.5
    session_overload_floor: int = Field(default=4, ge=1)  # fewer in flight is never overloaded
    load_gauges: LoadGauges | None = None  # None: a URL's load is its requests in flight alone
    server: ServerKind | None = None  # what the backend is (servers.py); None: asked of it at first use
    # a Messages stream's `message_start` input_tokens: estimated, or counted by the server's tokenizer
    message_start_tokens: Literal["estimate", "tokenizer"] = "estimate"

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        return _http_url(url)

    @field_validator("urls", mode="before")
    @classmethod
    def _http_urls(cls, urls: object) -> object:
        if isinstance(urls, str):
            urls = [url.strip() for url in urls.split(",")]
        return [_http_url(url) if isinstance(url, str) else url for url in urls] if isinstance(urls, list) else urls

    @field_validator("session_headers")
    @classmethod
    def _lower_case(cls, names: list[str]) -> list[str]:
        return [name.lower() for name in names]

    @field_validator("api_key")
    @classmethod
    def _expand_key(cls, key: str) -> str:
        return expand_variables(key)

    @property
    def overload_bound(self) -> float | None:
        """`session_overload` for the balancer: None for `never`."""
        return None if self.session_overload == "never" else self.session_overload

    @property
    def connect_seconds(self) -> float:
        """Seconds to open a connection (default: `timeout`, at most 10)."""
        return self.connect_timeout or min(self.timeout, 10.0)

    @property
    def first_byte_seconds(self) -> float:
        """Seconds from sending the request to the response's start (default: `timeout`)."""
        return self.first_byte_timeout or self.timeout

    @property
    def server_kind(self) -> ServerKind:
        """`server`, or `other` while it is unset and not yet detected."""
        return self.server or "other"

    @property
    def idle_seconds(self) -> float:
        """Seconds of silence allowed between two pieces of a response (default: `timeout`)."""
        return self.idle_timeout or self.timeout

    @model_validator(mode="after")
    def _one_target(self) -> BackendConfig:
        if [self.url is not None, self.urls is not None, self.demo].count(True) != 1:
            raise ValueError(
                "set exactly one of 'url' (a backend server), 'urls' (several) or 'demo: true' (the built-in demo)"
            )
        return self

    @property
    def base_urls(self) -> list[str]:
        """The backend's base URLs (empty for the demo)."""
        return self.urls or ([self.url] if self.url else [])


def _http_url(url: str) -> str:
    """An http(s) base URL, `${VAR}` expanded, without a trailing slash."""
    expanded = expand_variables(url)
    if not expanded.startswith(("http://", "https://")):
        raise ValueError(f"must be an http:// or https:// URL, got {expanded!r}{from_variables(url)}")
    return expanded.rstrip("/")
