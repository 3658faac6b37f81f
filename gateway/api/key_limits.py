"""Per-key limits (docs/configuration.md, "Per-key limits"): requests and
tokens per minute and requests in flight, per API key's name, counted in
this process or in the store's Redis (ops/rate_windows.py). A request over
a limit is a 429 with `Retry-After`, in its surface's error shape, counted
in `parsegate_rate_limited_total` by key name and limit.

`key_lease` is the check for one request, for any transport (the WebSocket
mode of Responses calls it per `response.create`); `KeyLimitsMiddleware`
applies it to the HTTP routes that reach a model. A lease ends when its
response does: the stream's last event sent, or the client gone; the
tokens the backend reported in its usage are counted then. A background
response's run takes its request's lease (`take_lease`) and ends it when
the run ends (api/responses_background.py).

A key's limits on one model (`model_rpm_limit`...) are checked once the
model is known (`model_lease`, called where a request's model is resolved),
against counts of their own, and end with the key's lease. A request one
of them refuses has been counted in its key's requests of the minute."""

from __future__ import annotations

from typing import NoReturn

from starlette.datastructures import State
from starlette.requests import HTTPConnection, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.auth import given_key
from gateway.api.errors import surface_error
from gateway.ops.errors import ApiError
from gateway.ops.key_limits_config import KeyLimits
from gateway.ops.observe import RequestRecord
from gateway.ops.rate_windows import LocalWindows, Refusal, Windows
from gateway.ops.store_config import StoreConfig

LIMITED_PATHS = frozenset(
    ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/responses/compact", "/v1/messages")
)
_MESSAGES = {
    "requests": "requests per minute",
    "tokens": "tokens per minute",
    "streams": "requests in flight",
}


def open_windows(store: StoreConfig) -> Windows:
    """Counts shared through the store's Redis, or this process's own."""
    if store.backend == "redis":
        from gateway.ops.rate_windows_redis import RedisWindows

        return RedisWindows(store.location, store.read_timeout, store.write_timeout)
    return LocalWindows()


LEASE_STATE = "key_lease"  # where a request's scope state holds its lease (`model_lease`, `take_lease`)


class KeyLease:
    """One admitted request's hold on its key's counts (and its model's);
    `end` once, by the request, or by whatever `taken` it (a background run)."""

    def __init__(self, windows: Windows, name: str, limits: KeyLimits) -> None:
        self.name, self.limits = name, limits
        self.held = [(windows, name, limits)]  # each count the request is in, and where it ends
        self.models: set[str] = set()
        self.ended = False
        self.taken = False

    async def end(self, record: RequestRecord | None) -> None:
        if self.ended:
            return
        self.ended = True
        tokens = (record.prompt_tokens or 0) + (record.completion_tokens or 0) if record is not None else 0
        for windows, name, limits in self.held:
            await windows.end(name, limits, tokens)


def _model_count(name: str, model: str) -> str:
    """The name a key's counts on `model` go by (a unit separator between: no key name or model holds one)."""
    return f"{name}\x1f{model}"


async def model_lease(connection: HTTPConnection, model: str) -> None:
    """Count the request on `connection` against its key's limits on
    `model` too, if it has any; ApiError 429 when one refuses it."""
    lease: KeyLease | None = connection.scope.get("state", {}).get(LEASE_STATE)
    if lease is None or model in lease.models:
        return
    limits = lease.limits.on_model(model)
    if limits is None:
        return
    lease.models.add(model)
    windows: Windows = connection.app.state.key_windows
    refused = await windows.admit(_model_count(lease.name, model), limits)
    if isinstance(refused, Refusal):
        _refuse(connection, lease.name, refused, model)
    lease.held.append((refused, _model_count(lease.name, model), limits))


async def key_lease(connection: HTTPConnection) -> KeyLease | None:
    """The lease of the request (or WebSocket message) on `connection`; None
    when its key has no limits; ApiError 429 when a limit refuses it."""
    state: State = connection.app.state
    found = state.config.server.limits_of(given_key(connection))
    if found is None:
        return None
    name, limits = found
    windows: Windows = state.key_windows
    refused = await windows.admit(name, limits)
    if isinstance(refused, Refusal):
        _refuse(connection, name, refused)
    return KeyLease(refused, name, limits)  # ended where it was counted


def _refuse(connection: HTTPConnection, name: str, refused: Refusal, model: str | None = None) -> NoReturn:
    connection.app.state.metrics.rate_limited.labels(name, refused.limit).inc()
    on = "" if model is None else f" on model {model!r}"
    message = f"API key {name!r} is over its limit of {_MESSAGES[refused.limit]}{on}; retry in {refused.retry_after} s"
    headers = {"retry-after": str(refused.retry_after)}
    raise ApiError(429, message, type="rate_limit_error", code="rate_limit_exceeded", headers=headers)


def take_lease(request: Request) -> KeyLease | None:
    """The request's lease, which its response no longer ends: the taker
    ends it (a background run, which goes on after the response)."""
    lease: KeyLease | None = request.scope.get("state", {}).get(LEASE_STATE)
    if lease is not None:
        lease.taken = True
    return lease


def _record(scope: Scope) -> RequestRecord | None:
    return scope.get("state", {}).get("record")  # ObserveMiddleware's, outside this one


class KeyLimitsMiddleware:
    """ASGI middleware: `key_lease` for each request to a model's route,
    ended as its response's last body message goes out (before the client
    sees it end), or when the request ends without one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limited = scope["type"] == "http" and scope["path"] in LIMITED_PATHS
        if not limited or not scope["app"].state.config.server.key_limits:  # no limits: the path as before
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            lease = await key_lease(request)
        except ApiError as error:
            await surface_error(request, error)(scope, receive, send)
            return
        if lease is None:
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[LEASE_STATE] = lease

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body") and not lease.taken:
                await lease.end(_record(scope))
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            if not lease.taken:
                await lease.end(_record(scope))
