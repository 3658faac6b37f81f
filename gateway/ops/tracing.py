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
    from fastapi import FastAPI

    from gateway.upstream.transport import Transport

UNTRACED_ROUTES = "health,metrics"


def tracing_installed() -> bool:
    """Whether the OpenTelemetry FastAPI and aiohttp client instrumentations are importable."""
    try:
        return all(
            importlib.util.find_spec(f"opentelemetry.instrumentation.{name}") is not None
            for name in ("fastapi", "aiohttp_client")
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


def trace_clients(clients: Iterable[Transport]) -> None:
    """Give every backend call made with these clients, not yet opened, a
    client span (opentelemetry-instrumentation-aiohttp-client)."""
    from opentelemetry.instrumentation.aiohttp_client import create_trace_config

    for client in clients:
        client.trace_configs.append(create_trace_config())
