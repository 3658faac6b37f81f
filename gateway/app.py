"""The HTTP service: `create_app(config)` builds the FastAPI app.

    POST /v1/chat/completions   OpenAI chat completions, streamed or not
    POST /v1/responses          OpenAI Responses API, streamed or not; stored unless
                                `store: false` (gateway/api/stored_responses.py,
                                gateway/api/conversations.py, docs/state.md)
    GET  /v1/responses          the same over a WebSocket (Upgrade: websocket;
                                gateway/api/responses_socket.py)
    POST /v1/completions        text completions, passed through unparsed
    POST /v1/messages           Anthropic Messages, streamed or not (gateway/api/messages.py)
    POST /v1/messages/count_tokens
    GET  /v1/models             the configured models (and a catch-all backend's)
    GET  /health                liveness; never calls a backend
    GET  /metrics               Prometheus metrics (gateway/metrics.py), and with
                                `server.sidecar.engine_metrics` the engine's own
                                (gateway/api/engine_metrics_routes.py)
    GET  /openapi.json          the OpenAPI description (gateway/openapi.py)

With `server.api_keys` set, every /v1 route wants `Authorization: Bearer <key>`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.types import Receive, Scope, Send

from gateway.api.auth import require_api_key, require_metrics_key, require_openapi_key
from gateway.api.chat import chat_completions
from gateway.api.compaction import compact
from gateway.api.compaction_seal import Seal
from gateway.api.completions import completions
from gateway.api.conversations import add_conversation_routes
from gateway.api.engine_metrics_routes import add_engine_metrics_route, with_engine_metrics
from gateway.api.errors import surface_error
from gateway.api.key_limits import KeyLimitsMiddleware, open_windows
from gateway.api.limits import ConcurrencyLimit
from gateway.api.messages import add_messages_routes
from gateway.api.models import list_models
from gateway.api.offload import converting_limiter
from gateway.api.openapi import chat_completions_openapi, completions_openapi, responses_openapi
from gateway.api.responses import responses
from gateway.api.responses_background import BackgroundRuns
from gateway.api.responses_socket import responses_socket
from gateway.api.sse import SEND_TIMEOUT, SERVER_SEND
from gateway.api.stored_responses import add_stored_response_routes
from gateway.ops import collector
from gateway.ops.config import Config
from gateway.ops.errors import install_error_handlers
from gateway.ops.forwarded_headers import ForwardedHeaders
from gateway.ops.genai_telemetry import GenAiTelemetry
from gateway.ops.json_body import json_response
from gateway.ops.logs import quiet_unfinished_on_purpose, redact_in_logs
from gateway.ops.metrics import Metrics
from gateway.ops.observe import ObserveMiddleware
from gateway.ops.secrets import Secrets
from gateway.ops.server_config import ServerConfig
from gateway.ops.store import open_store
from gateway.ops.tracing import trace_app, trace_clients, without_native_telemetry
from gateway.reload import reload_on_sighup
from gateway.upstream.backends import close_backends, open_backends
from gateway.upstream.derived_parsers import with_template_parsers


async def health() -> Response:
    return json_response({"status": "ok"})


async def openapi(request: Request) -> Response:
    return json_response(request.app.openapi())


class Gateway(FastAPI):
    """The FastAPI app, which hands its event streams the server's own ASGI
    `send` (sse.py, `SERVER_SEND`), so that the events between a stream's
    start and its end skip the middlewares: parsegate's and starlette's
    (observe.py, limits.py, the error and exception middlewares) watch only
    the start and the end. Off (`direct_body`) when a middleware that reads
    every message is installed: OpenTelemetry's makes a span per send.
    It hands them `server.send_timeout` too (`SEND_TIMEOUT`), as the config
    is at the request (a reload changes it)."""

    direct_body = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.direct_body:
            scope[SERVER_SEND] = send
        scope[SEND_TIMEOUT] = self.state.config.server.send_timeout
        await super().__call__(scope, receive, send)


def create_app(
    config: Config, config_path: str | None = None, host: str | None = None, *, settle_collector: bool = False
) -> Gateway:
    """The gateway for `config`; backends' clients open at startup, close at
    shutdown. With `config_path`, SIGHUP reloads the config from it, and the
    reload's start-up lines name `host`, the address it listens on (default
    `server.host`). With `settle_collector`, for a process that serves only
    this app, the garbage collector is set for serving as the app starts
    (ops/collector.py); before its backends open, so that those a reload
    retires are collected as ever."""
    config = with_template_parsers(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settle_collector:
            collector.settle()
        app.state.backends = open_backends(app.state.config)
        store = app.state.store = open_store(app.state.config.store)
        purging = asyncio.create_task(store.purge_periodically()) if store is not None else None
        if config.server.opentelemetry:
            trace_clients(backend.client for backend in app.state.backends.values())
        if config_path is not None:
            reload_on_sighup(app, config_path, host or config.server.host)
        try:
            yield
        finally:
            await app.state.background.close()  # each run stores its response before the store closes
            await close_backends(app.state.backends)
            if store is not None and purging is not None:
                purging.cancel()
                await store.close()
            await app.state.key_windows.close()

    app = Gateway(
        title="parsegate",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the key when api_keys are set
        **without_native_telemetry(),
    )
    app.state.created = int(time.time())
    app.state.config = config
    app.state.converting = converting_limiter()
    app.state.background = BackgroundRuns()  # background responses' runs (api/responses_background.py)
    app.state.key_windows = open_windows(config.store)  # per-key limits' counts (api/key_limits.py)
    app.state.seal = Seal(config.server.seal_key, config.server.previous_seal_keys)  # a reload keeps them
    redact_in_logs(Secrets.of(config))
    quiet_unfinished_on_purpose()
    metrics = app.state.metrics = Metrics()
    metrics.declare_models([model.name for model in config.models])
    install_error_handlers(app, surface_error)

    def server_config() -> ServerConfig:
        return app.state.config.server

    app.add_middleware(KeyLimitsMiddleware)
    app.add_middleware(ConcurrencyLimit, server_config=server_config)
    genai = GenAiTelemetry() if config.server.opentelemetry else None
    # sees the 429s too
    app.add_middleware(ObserveMiddleware, metrics=metrics, server_config=server_config, genai=genai)
    app.add_middleware(ForwardedHeaders, sidecar_config=lambda: app.state.config.server.sidecar)  # outermost
    v1 = APIRouter(prefix="/v1", dependencies=[Depends(require_api_key)])
    v1.add_api_route("/chat/completions", chat_completions, methods=["POST"], openapi_extra=chat_completions_openapi())
    v1.add_api_route("/responses", responses, methods=["POST"], openapi_extra=responses_openapi())
    # before /responses/{response_id}, which would take its path
    v1.add_api_route("/responses/compact", compact, methods=["POST"], openapi_extra=responses_openapi())
    # The surfaces first: FastAPI tries a router's routes in turn, twice over
    # the router that matches, and Messages behind the stored responses' and
    # conversations' routes paid for all of them (bench/README.md, "Performance IV").
    add_messages_routes(v1)
    add_stored_response_routes(v1)
    add_conversation_routes(v1)
    v1.add_api_route("/completions", completions, methods=["POST"], openapi_extra=completions_openapi())
    v1.add_api_route("/models", list_models, methods=["GET"])
    app.include_router(v1)
    app.add_api_websocket_route("/v1/responses", responses_socket)  # its key is checked on the upgrade
    app.add_api_route("/health", health, methods=["GET"])
    app.add_api_route(
        "/openapi.json", openapi, methods=["GET"], include_in_schema=False, dependencies=[Depends(require_openapi_key)]
    )
    scrape = with_engine_metrics(metrics.endpoint)
    app.add_api_route("/metrics", scrape, methods=["GET"], dependencies=[Depends(require_metrics_key)])
    add_engine_metrics_route(app)
    routes = (route for router in (app.router, v1) for route in router.routes)
    metrics.declare_routes([route.path for route in routes if isinstance(route, APIRoute)])
    if config.server.opentelemetry:
        trace_app(app)
        app.direct_body = False
    return app
