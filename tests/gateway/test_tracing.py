"""`server.opentelemetry: true`: a server span per request, a client span
per backend call, and the trace carried to the backend in `traceparent`."""

from __future__ import annotations

import time

import pytest
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from gateway.app import create_app
from gateway.ops.config import Config, ConfigError, load_config
from tests.sdk_clients import openai_client


def finished_spans(exporter: InMemorySpanExporter, kinds: set[SpanKind]) -> list:
    """The finished spans, once one of each kind has ended (a server span
    ends just after the client has its response)."""
    deadline = time.monotonic() + 5
    while {span.kind for span in exporter.get_finished_spans()} < kinds and time.monotonic() < deadline:
        time.sleep(0.01)  # polling a real condition: the span's end
    return list(exporter.get_finished_spans())


@pytest.fixture
def traced_gateway(serve, gateway_config):
    """A gateway with the flag on; its instrumentation, which also patches
    Starlette's BackgroundTask class, is removed afterwards."""
    app = create_app(Config.model_validate({**gateway_config, "server": {"opentelemetry": True}}))
    yield serve(app)
    FastAPIInstrumentor.uninstrument_app(app)


def test_requests_are_traced_through_to_the_backend(traced_gateway, spans, fake):
    spans.clear()  # the process's exporter: other modules' spans too
    traced = traced_gateway
    client = openai_client(traced)
    client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}])

    finished = finished_spans(spans, {SpanKind.SERVER, SpanKind.CLIENT})
    [server] = [span for span in finished if span.kind is SpanKind.SERVER]
    [upstream] = [span for span in finished if span.kind is SpanKind.CLIENT]
    assert server.name == "POST /v1/chat/completions"
    assert upstream.context.trace_id == server.context.trace_id
    traceparent = fake.requests[-1][0]["traceparent"]
    assert traceparent.split("-")[1] == format(server.context.trace_id, "032x")


def test_without_the_flag_nothing_is_traced(gateway_url, spans, fake):
    spans.clear()
    client = openai_client(gateway_url)
    client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}])
    list(client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}], stream=True))
    assert spans.get_finished_spans() == () and "traceparent" not in fake.requests[-1][0]


def test_the_flag_without_the_packages_stops_start_up(monkeypatch, tmp_path):
    monkeypatch.setattr("gateway.ops.tracing.tracing_installed", lambda: False)
    config = tmp_path / "config.yaml"
    config.write_text("server:\n  opentelemetry: true\nmodels:\n  - name: demo\n    backend: {demo: true}\n")
    with pytest.raises(ConfigError, match=r"server\.opentelemetry: needs the OpenTelemetry instrumentations"):
        load_config(config)


def test_a_traced_stream_sends_every_event_through_the_instrumentation(traced_gateway, spans, fake):
    """Untraced, a stream's events skip the middlewares (app.py, `Gateway`);
    traced, OpenTelemetry's still sees each one: a span per body send, not
    only the end's."""
    spans.clear()
    client = openai_client(traced_gateway)
    chunks = list(
        client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}], stream=True)
    )

    finished = finished_spans(spans, {SpanKind.SERVER, SpanKind.CLIENT})
    body_sends = [span for span in finished if span.attributes.get("asgi.event.type") == "http.response.body"]
    assert len(chunks) > 2 and len(body_sends) > 2
