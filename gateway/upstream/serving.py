"""What serves one request, worked out once: `serving_for` finds the
backend of the requested model and the model's settings as they hold for
this request, in one `Serving`. The backend is the one started for the
entry, never changed; the settings are the entry's, with what only a
request can settle:

- the optional catch-all entry (`name: "*"`) serves every model name no
  other entry serves, as that name (or `backend.model`), with the parsers
  picked from it;
- a server's kind, asked of it when `backend.server` is unset
  (server_kind.py), where the kind changes the request;
- the parsers a server's own template implies (`parsers_from: backend`,
  derived_parsers.py).

In `GET /v1/models` the catch-all stands for the models its backend lists
itself (when the requested name is what goes upstream): those are the names
it can serve.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.ops.config import CATCH_ALL, ModelConfig
from gateway.ops.errors import ApiError
from gateway.plan.parse_plan import ParsePlan
from gateway.upstream.backend import Backend
from gateway.upstream.balancer import Route
from gateway.upstream.derived_parsers import FROM_SERVER, with_server_template_parsers
from gateway.upstream.server_kind import with_server_kind
from gateway.upstream.transport import UpstreamResponse

LISTING_TIMEOUT = 5.0


class Serving:
    """One request's backend and the model's settings for it; the
    operations of a turn, with failures named for that model, sent to the
    URL its `route` picks (its session's key, the URL it would rather have,
    when the backend has several URLs: balancer.py)."""

    __slots__ = ("backend", "model", "errors", "route")

    def __init__(self, backend: Backend, model: ModelConfig) -> None:
        self.backend = backend
        self.model = model
        self.errors = backend.errors_for(model)
        self.route = Route()

    @property
    def name(self) -> str:
        return self.model.name

    async def prepare(self, payload: dict, plan: ParsePlan) -> tuple[bytes, ParsePlan]:
        return await self.backend.prepare(payload, plan, self.model)

    async def open(self, body: bytes, path: str | None = None) -> UpstreamResponse:
        """The backend's answer to `body`, at `path` (the backend's own
        generation route by default: chat, or completions in template mode)."""
        if path is None:
            return await self.backend.open(body, errors=self.errors, route=self.route)
        return await self.backend.open(body, path, errors=self.errors, route=self.route)

    async def complete(self, body: bytes) -> dict:
        return await self.backend.complete(body, self.errors, self.route)

    async def read(self, response: UpstreamResponse) -> bytes:
        return await self.backend.read(response, self.errors)

    async def push_payloads(
        self,
        response: UpstreamResponse,
        deliver: Callable[[list[bytes]], asyncio.Future[None] | None],
        drain_seconds: float,
    ) -> None:
        await self.backend.push_payloads(response, deliver, drain_seconds, self.errors)

    async def release(self, response: UpstreamResponse) -> None:
        await self.backend.release(response)


def entry_for(backends: dict[str, Backend], requested: str) -> tuple[Backend, ModelConfig] | None:
    """The backend serving `requested` and its entry's settings for that
    name: its own entry, else the catch-all's; None when none serves it."""
    backend = backends.get(requested)
    if backend is not None:
        return backend, backend.config
    catch_all = backends.get(CATCH_ALL)
    return (catch_all, catch_all.config.routed(requested)) if catch_all is not None else None


def entry_serving(backends: dict[str, Backend], requested: str) -> Serving | None:
    """What serves `requested` as its entry is configured, asking the
    server nothing (a pass-through's needs); None when nothing does."""
    found = entry_for(backends, requested)
    return Serving(*found) if found is not None else None


async def serving_for(backends: dict[str, Backend], requested: str, *, needs_server_kind: bool) -> Serving | None:
    """What serves `requested` (None when nothing does): its entry, the
    server's kind where it changes the request (`needs_server_kind`: tool
    calls, token counts; always in template mode: servers.py), and the
    parsers the server's template implies."""
    found = entry_for(backends, requested)
    if found is None:
        return None
    backend, model = found
    asks_kind = needs_server_kind or model.chat_template is not None
    if asks_kind and model.backend.server is None and not model.backend.demo:
        model = await with_server_kind(backend, model)
    if model.parsers_origin == FROM_SERVER:
        model = await with_server_template_parsers(backend, model)
    return Serving(backend, model)


async def served_models(backends: dict[str, Backend]) -> list[tuple[str, Backend]]:
    """(model name, backend) for `GET /v1/models`: every named entry, then
    the names the catch-all's backend lists that no entry has."""
    served = [(name, backend) for name, backend in backends.items() if name != CATCH_ALL]
    catch_all = backends.get(CATCH_ALL)
    if catch_all is not None:
        served += [(name, catch_all) for name in await _upstream_model_ids(catch_all) if name not in backends]
    return served


async def _upstream_model_ids(catch_all: Backend) -> list[str]:
    """The model ids the catch-all's backend lists; none when it sends every
    request to one fixed `backend.model`, or when it cannot say."""
    if catch_all.config.backend.model:
        return []
    listing: object = None
    timer = asyncio.timeout(LISTING_TIMEOUT)
    try:
        async with timer:
            listing = await catch_all.fetch("/models")
    except ApiError:
        return []
    except TimeoutError:
        if not timer.expired():
            raise
    listed = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(listed, list):
        return []
    return [model["id"] for model in listed if isinstance(model, dict) and isinstance(model.get("id"), str)]
