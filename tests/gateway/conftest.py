"""Fixtures of the gateway suites."""

from __future__ import annotations

import threading
import time

import openai
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.upstream import asked_once, fast_paths
from gateway.upstream.asked_once import FAILURE_KEPT_SECONDS
from tests.scripted_backend import ScriptedBackend
from tests.sdk_clients import openai_client


@pytest.fixture(scope="module")
def client(gateway_url: str) -> openai.OpenAI:
    return openai_client(gateway_url, api_key="client-key")


@pytest.fixture(scope="session")
def spans() -> InMemorySpanExporter:
    """The spans of the process's tracer provider (set once per process:
    OpenTelemetry refuses a second)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture(scope="session")
def metric_reader() -> InMemoryMetricReader:
    """The metrics of the process's meter provider (set once per process, as the tracer's)."""
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return reader


class FailureClock:
    """`time.monotonic()` for asked_once.py, whose failures are kept
    `FAILURE_KEPT_SECONDS`: still until the test moves it."""

    def __init__(self) -> None:
        self.start = self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def pass_the_window(self) -> None:
        """Past the window of a failure kept at `start`."""
        self.now = self.start + FAILURE_KEPT_SECONDS


@pytest.fixture
def failure_clock(monkeypatch: pytest.MonkeyPatch) -> FailureClock:
    """The clock of the failures kept of `/props` and the server-kind probe
    (asked_once.py), moved only by the test, on the served gateway's thread too."""
    clock = FailureClock()
    monkeypatch.setattr(asked_once, "time", clock)
    return clock


@pytest.fixture(params=[True, False], ids=["fast_paths", "fallback"])
def both_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """A test of the transport or the event stream, run twice: with the fast
    paths (aiohttp's reader taken over, the server's send stepped:
    upstream/fast_paths.py) and with their fallbacks, the paths a process
    takes where aiohttp or Python lacks those internals, or with
    `PARSEGATE_FAST_PATHS=0`. Where they are missing the first run takes the
    fallback too, and tests/gateway/test_fast_paths.py fails."""
    on = request.param and fast_paths.unavailable is None
    monkeypatch.setattr(fast_paths, "ENABLED", on)
    return on


@pytest.fixture(scope="module")
def scripted() -> ScriptedBackend:
    return ScriptedBackend()


@pytest.fixture
def side(scripted: ScriptedBackend) -> ScriptedBackend:
    """The module's scripted server (a raw HTTP backend,
    tests/scripted_backend.py) with no routes, no requests and none held,
    for this test."""
    scripted.routes.clear()
    scripted.requests.clear()
    scripted.held, scripted.left = threading.Semaphore(0), threading.Semaphore(0)
    return scripted
