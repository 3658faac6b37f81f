"""The HTTP service: `create_app(config)` builds the FastAPI app.

    POST /v1/chat/completions   OpenAI chat completions, streamed or not
    GET  /v1/models             the configured models
    GET  /health                liveness; never calls a backend
    GET  /metrics               Prometheus metrics (gateway/metrics.py)
    GET  /openapi.json          the OpenAPI description (gateway/openapi.py)

With `server.api_keys` set, every /v1 route wants `Authorization: Bearer <key>`.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import orjson
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response

from gateway.config import Config
from gateway.errors import ApiError, install_error_handlers
from gateway.metrics import Metrics
from gateway.observe import ObserveMiddleware, upstream_error_kind
from gateway.openapi import chat_completions_openapi
from gateway.request import ParsePlan, read_request
from gateway.respond import completion
from gateway.stream import stream_completion
from gateway.tracing import trace_app, trace_backends, without_native_telemetry
from gateway.upstream import Backend, close_backends, open_backends


def _json(payload: dict) -> Response:
    return Response(orjson.dumps(payload), media_type="application/json")


def _backend(request: Request, model: str) -> Backend:
    backend = request.app.state.backends.get(model)
    if backend is None:
        message = f"The model {model!r} does not exist; see GET /v1/models"
        raise ApiError(404, message, param="model", code="model_not_found")
    return backend


async def chat_completions(request: Request) -> Response:
    payload, chat = read_request(await request.body())
    backend = _backend(request, chat.model)
    plan = ParsePlan.for_request(payload, chat, backend.config)
    record = request.state.record
    record.serves(backend.name, plan.tool_call_parser, bool(chat.stream))
    body = backend.body(payload, keep_special_tokens=plan.keeps_special_tokens())
    try:
        if chat.stream:
            return await stream_completion(backend, body, plan, chat.model, record)
        answer = await backend.complete(body)
    except ApiError as error:
        record.upstream_failed(upstream_error_kind(error))
        raise
    return _json(completion(answer, plan, chat.model, record))


async def list_models(request: Request) -> Response:
    created = request.app.state.created
    data = [
        {
            "id": backend.name,
            "object": "model",
            "created": created,
            "owned_by": "parsegate-demo" if backend.config.backend.demo else "parsegate",
        }
        for backend in request.app.state.backends.values()
    ]
    return _json({"object": "list", "data": data})


async def health() -> Response:
    return _json({"status": "ok"})


def _api_key_check(keys: list[str]) -> Callable[[Request], Awaitable[None]]:
    """A dependency accepting only `Authorization: Bearer <one of keys>`."""
    accepted = [key.encode() for key in keys]

    async def check(request: Request) -> None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        token = given.strip().encode()
        if scheme.lower() != "bearer" or not any(hmac.compare_digest(token, key) for key in accepted):
            raise ApiError(401, "missing or invalid API key", type="authentication_error", code="invalid_api_key")

    return check


def create_app(config: Config) -> FastAPI:
    """The gateway for `config`; backends' clients open at startup, close at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.backends = open_backends(config)
        if config.server.opentelemetry:
            trace_backends(app.state.backends)
        try:
            yield
        finally:
            await close_backends(app.state.backends)

    app = FastAPI(
        title="parsegate", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url="/openapi.json",
        **without_native_telemetry(),
    )
    app.state.created = int(time.time())
    metrics = Metrics()
    metrics.declare_models([model.name for model in config.models])
    app.add_middleware(ObserveMiddleware, metrics=metrics)
    install_error_handlers(app)
    guard = [Depends(_api_key_check(config.server.api_keys))] if config.server.api_keys else []
    v1 = APIRouter(prefix="/v1", dependencies=guard)
    v1.add_api_route("/chat/completions", chat_completions, methods=["POST"], openapi_extra=chat_completions_openapi())
    v1.add_api_route("/models", list_models, methods=["GET"])
    app.include_router(v1)
    app.add_api_route("/health", health, methods=["GET"])
    app.add_api_route("/metrics", metrics.endpoint, methods=["GET"])
    if config.server.opentelemetry:
        trace_app(app)
    return app
