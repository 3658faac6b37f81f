"""`server.opentelemetry: true`: OpenTelemetry's GenAI conventions, read
with the SDK's in-memory metric reader and span exporter, for chat
completions, Responses and Messages, streamed and not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import USAGE
from tests.gateway.test_tracing import finished_spans
from tests.sdk_clients import anthropic_client, openai_client

MODEL = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "parsegate",
    "gen_ai.request.model": "qwen3",
    "gen_ai.response.model": "qwen3",
}
REPLY = "<think>\nA greeting.\n</think>\n\nHello!"
Points = dict[tuple[str, frozenset], tuple[int, float]]


def chat(url: str, stream: bool) -> None:
    client = openai_client(url)
    messages = [{"role": "user", "content": "Hi"}]
    if stream:
        chunks = client.chat.completions.create(
            model="qwen3", messages=messages, stream=True, stream_options={"include_usage": True}
        )
        assert list(chunks)[-1].usage is not None
    else:
        assert client.chat.completions.create(model="qwen3", messages=messages).choices[0].message.content


def responses(url: str, stream: bool) -> None:
    client = openai_client(url)
    if stream:
        assert list(client.responses.create(model="qwen3", input="Hi", store=False, stream=True))[-1].response.usage
    else:
        assert client.responses.create(model="qwen3", input="Hi", store=False).output_text


def messages(url: str, stream: bool) -> None:
    client = anthropic_client(url)
    question = [{"role": "user", "content": "Hi"}]
    if stream:
        assert list(client.messages.create(model="qwen3", max_tokens=64, messages=question, stream=True))
    else:
        assert client.messages.create(model="qwen3", max_tokens=64, messages=question).content


SURFACES: dict[str, tuple[str, Callable[[str, bool], None]]] = {
    "chat": ("/v1/chat/completions", chat),
    "responses": ("/v1/responses", responses),
    "messages": ("/v1/messages", messages),
}


def points(reader: InMemoryMetricReader) -> Points:
    """Every `gen_ai.*` histogram point so far: (count, sum) by (name, attributes)."""
    data = reader.get_metrics_data()
    found: Points = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name.startswith("gen_ai."):
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        found[(metric.name, frozenset(point.attributes.items()))] = (point.count, point.sum)
    return found


def added(before: Points, after: Points, name: str, **extra: str) -> tuple[int, float]:
    """What the requests between `before` and `after` added to `name`'s point for the model's attributes."""
    key = (name, frozenset({**MODEL, **extra}.items()))
    count, total = after.get(key, (0, 0.0))
    count_before, total_before = before.get(key, (0, 0.0))
    return count - count_before, total - total_before


@pytest.fixture(scope="module")
def traced(serve, gateway_config, metric_reader, spans):
    app = create_app(Config.model_validate({**gateway_config, "server": {"opentelemetry": True}}))
    yield serve(app)
    FastAPIInstrumentor.uninstrument_app(app)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_each_surface_records_the_genai_metrics_and_span_attributes(
    traced, metric_reader: InMemoryMetricReader, spans: InMemorySpanExporter, fake, surface, stream
):
    path, ask = SURFACES[surface]
    fake.script(REPLY)
    spans.clear()
    before = points(metric_reader)
    ask(traced, stream)
    after = points(metric_reader)

    assert added(before, after, "gen_ai.server.request.duration")[0] == 1
    assert added(before, after, "gen_ai.client.token.usage", **{"gen_ai.token.type": "input"}) == (1, 7)
    assert added(before, after, "gen_ai.client.token.usage", **{"gen_ai.token.type": "output"}) == (1, 11)
    first_token = added(before, after, "gen_ai.server.time_to_first_token")
    per_token = added(before, after, "gen_ai.server.time_per_output_token")
    assert (first_token[0], per_token[0]) == ((1, 1) if stream else (0, 0))  # known for streams only
    assert first_token[1] >= 0 and per_token[1] >= 0

    [server] = [
        span for span in finished_spans(spans, {SpanKind.SERVER, SpanKind.CLIENT}) if span.kind is SpanKind.SERVER
    ]
    assert server.name.startswith(f"POST {path}")
    attributes = dict(server.attributes or {})
    assert {key: attributes.get(key) for key in MODEL} == MODEL
    assert attributes["gen_ai.system"] == "parsegate"
    assert attributes["gen_ai.usage.input_tokens"] == USAGE["prompt_tokens"]
    assert attributes["gen_ai.usage.output_tokens"] == USAGE["completion_tokens"]
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "error.type" not in attributes


def test_a_failed_request_records_its_error_type(traced, metric_reader, spans, fake):
    fake.error = (500, b'{"error": {"message": "boom"}}')
    spans.clear()
    before = points(metric_reader)
    client = openai_client(traced)
    with pytest.raises(Exception, match="boom|500|502"):
        client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}])
    after = points(metric_reader)
    assert added(before, after, "gen_ai.server.request.duration", **{"error.type": "backend_5xx"})[0] == 1
    assert added(before, after, "gen_ai.server.request.duration")[0] == 0
    [server] = [
        span for span in finished_spans(spans, {SpanKind.SERVER, SpanKind.CLIENT}) if span.kind is SpanKind.SERVER
    ]
    assert server.attributes["error.type"] == "backend_5xx"


def test_the_token_histogram_has_the_conventions_buckets(traced, metric_reader, spans, fake):
    fake.script(REPLY)
    spans.clear()
    chat(traced, stream=False)
    finished_spans(spans, {SpanKind.SERVER, SpanKind.CLIENT})  # its span ends here, not in a later test
    data = metric_reader.get_metrics_data()
    [usage] = [
        metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "gen_ai.client.token.usage"
    ]
    assert usage.unit == "{token}"
    bounds = usage.data.data_points[0].explicit_bounds  # type: ignore[union-attr]
    assert list(bounds) == [4**power for power in range(14)]


def test_without_the_flag_no_genai_metric_is_recorded(gateway_url, metric_reader, fake):
    fake.script(REPLY)
    before = points(metric_reader)
    chat(gateway_url, stream=True)
    assert points(metric_reader) == before
