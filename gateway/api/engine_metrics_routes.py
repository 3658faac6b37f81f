"""The engine's own `/metrics` on parsegate's port (`server.sidecar.engine_metrics`,
docs/llm-d.md): `merge` serves it after parsegate's series at `GET /metrics`,
`path` on a route of its own (`engine_metrics_path`), as an llm-d endpoint
picker scrapes it; `off` (the default) serves parsegate's series only.
The scrape itself is upstream/engine_metrics.py's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response

from gateway.api.auth import require_metrics_key
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.upstream.engine_metrics import TEXT_FORMAT, engine_backend, merged, scrape_engine, scrape_up

Endpoint = Callable[[Request], Awaitable[Response]]


async def _engine_text(request: Request) -> bytes | None:
    config = request.app.state.config.server.sidecar
    backend = engine_backend(request.app.state.backends, config.engine_metrics_model)
    return await scrape_engine(backend, config) if backend is not None else None


def with_engine_metrics(own: Endpoint) -> Endpoint:
    """`GET /metrics`: parsegate's series (`own`), then, with `merge`, the engine's."""

    async def scrape(request: Request) -> Response:
        response = await own(request)
        if request.app.state.config.server.sidecar.engine_metrics != "merge":
            return response
        engine = await _engine_text(request)
        body = merged(bytes(response.body) + scrape_up(engine is not None), engine or b"")
        return Response(body, media_type=TEXT_FORMAT)

    return scrape


async def engine_metrics(request: Request) -> Response:
    """The engine's series alone, with the gauge that says the scrape came through."""
    engine = await _engine_text(request)
    if engine is None:
        raise ApiError(502, "the engine sent no metrics", type=UPSTREAM_ERROR, code="upstream_unreachable")
    return Response(merged(scrape_up(True), engine), media_type=TEXT_FORMAT)


def add_engine_metrics_route(app: FastAPI) -> None:
    """The route of `path` mode, when the config at start-up asks for it."""
    config = app.state.config.server.sidecar
    if config.engine_metrics == "path":
        dependencies = [Depends(require_metrics_key)]
        app.add_api_route(config.engine_metrics_path, engine_metrics, methods=["GET"], dependencies=dependencies)
