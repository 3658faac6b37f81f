"""Optional OpenTelemetry tracing (`server.opentelemetry: true`, with
`pip install 'parsegate[otel]'`): a server span per request and a client
span per backend call, whose `traceparent` header carries the trace to the
backend. Spans go to the process's tracer provider, set up as usual (for
example by `opentelemetry-instrument` and the `OTEL_*` variables)."""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # this module is imported by config checks, before the web stack
    import httpx
    from fastapi import FastAPI

UNTRACED_ROUTES = "health,metrics"


def tracing_installed() -> bool:
    """Whether the OpenTelemetry FastAPI and httpx instrumentations are importable."""
    try:
        return all(
            importlib.util.find_spec(f"opentelemetry.instrumentation.{name}") is not None
            for name in ("fastapi", "httpx")
        )
    except ModuleNotFoundError:
        return False


def without_native_telemetry() -> dict:
    """`FastAPI(...)` options that turn off the OpenTelemetry newer FastAPI
    releases emit on their own, so tracing follows `server.opentelemetry` alone."""
    from fastapi import FastAPI

    if "telemetry" in inspect.signature(FastAPI).parameters:
        return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    return {}


def trace_app(app: FastAPI) -> None:
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls=UNTRACED_ROUTES)


def trace_clients(clients: Iterable[httpx.AsyncClient]) -> None:
    """Give every backend call made with these clients a client span."""
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    for client in clients:
        HTTPXClientInstrumentor.instrument_client(client)
