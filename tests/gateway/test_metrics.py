"""`GET /metrics`, scraped after real requests made with the openai client
through a gateway of its own (so counts start at zero)."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
ONE_CALL = '<think>\nNeed weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
BACKEND_CALL = {
    "tool_calls": [{"index": 0, "id": "b1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
}
MALFORMED_THEN_CUT_CALL = (
    'Let me try. <tool_call>not json</tool_call> Again: <tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
)


@pytest.fixture(scope="module")
def gateway(serve, gateway_config) -> str:
    return serve(create_app(Config.model_validate(gateway_config)))


@pytest.fixture(scope="module")
def client(gateway: str) -> openai.OpenAI:
    return openai_client(gateway)


def scrape(gateway: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics, keyed by (sample name, labels)."""
    response = httpx.get(f"{gateway}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_a_streamed_tool_call_counts_request_latency_tokens_and_call(gateway, client, fake):
    fake.script(ONE_CALL, chunk_size=4)
    stream = client.chat.completions.create(
        model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    )
    assert any(chunk.choices and chunk.choices[0].delta.tool_calls for chunk in list(stream))
    chunks_with_text = -(-len(ONE_CALL) // 4)

    samples = scrape(gateway)
    assert value(samples, "parsegate_requests_total", model="qwen3", status="200", route="/v1/chat/completions") == 1
    assert value(samples, "parsegate_time_to_first_token_seconds_count", model="qwen3") == 1
    assert value(samples, "parsegate_time_to_first_token_seconds_sum", model="qwen3") > 0
    assert value(samples, "parsegate_inter_chunk_latency_seconds_count", model="qwen3") == chunks_with_text - 1
    assert value(samples, "parsegate_tokens_total", model="qwen3", kind="prompt") == 7
    assert value(samples, "parsegate_tokens_total", model="qwen3", kind="completion") == 11
    assert value(samples, "parsegate_tool_calls_total", model="qwen3", parser="qwen25") == 1
    assert value(samples, "parsegate_upstream_errors_total", model="qwen3", kind="stream_cut") == 0


def test_usage_on_every_chunk_is_counted_once(serve, gateway_config, fake):
    gateway = serve(create_app(Config.model_validate(gateway_config)))
    client = openai_client(gateway)

    def event(text: str, completion_tokens: int, reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": {"content": text}, "finish_reason": reason}
        usage = {"prompt_tokens": 5, "completion_tokens": completion_tokens, "total_tokens": 5 + completion_tokens}
        return b"data: " + orjson.dumps({"choices": [choice], "usage": usage}) + b"\n\n"

    fake.raw_stream = [event("a", 1), event("b", 2), event("", 3, "stop"), b"data: [DONE]\n\n"]
    continuous = {"include_usage": True, "continuous_usage_stats": True}  # vLLM: usage on every chunk
    stream = client.chat.completions.create(
        model="plain", messages=MESSAGES, stream=True, extra_body={"stream_options": continuous}
    )
    assert [chunk.usage.completion_tokens for chunk in stream if chunk.usage] == [1, 2, 3]
    samples = scrape(gateway)
    assert value(samples, "parsegate_tokens_total", model="plain", kind="prompt") == 5
    assert value(samples, "parsegate_tokens_total", model="plain", kind="completion") == 3


@pytest.mark.slow  # 11 s, 7 s
@pytest.mark.parametrize("stream", [False, True])
def test_calls_the_backend_parsed_itself_are_counted_with_ours(serve, gateway_config, fake, stream):
    """Raw call text, then the backend's own structured call: every call the
    client gets is counted (streamed, our parser reads the first one; whole,
    the backend's call marks the message as parsed, its text stays content)."""
    gateway = serve(create_app(Config.model_validate(gateway_config)))
    client = openai_client(gateway)
    fake.script_parsed(
        {"content": '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'},
        BACKEND_CALL,
    )
    reply = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, stream=stream)
    if stream:
        calls = {call.index for chunk in reply for call in chunk.choices[0].delta.tool_calls or ()}
    else:
        calls = {index for index, _ in enumerate(reply.choices[0].message.tool_calls)}
    assert calls == ({0, 1} if stream else {0})
    assert value(scrape(gateway), "parsegate_tool_calls_total", model="qwen3", parser="qwen25") == len(calls)


@pytest.mark.slow  # 7 s
def test_backend_parsed_reasoning_and_calls_time_the_first_token(serve, gateway_config, fake):
    """A model without parsers of ours: the backend's reasoning is its first
    text, its call is counted under `parser="none"`."""
    gateway = serve(create_app(Config.model_validate(gateway_config)))
    client = openai_client(gateway)
    fake.script_parsed(
        {"reasoning_content": "Need the weather."},
        BACKEND_CALL,
    )
    chunks = list(client.chat.completions.create(model="plain", messages=MESSAGES, tools=TOOLS, stream=True))
    assert any(chunk.choices and chunk.choices[0].delta.tool_calls for chunk in chunks)
    samples = scrape(gateway)
    assert value(samples, "parsegate_time_to_first_token_seconds_count", model="plain") == 1
    assert value(samples, "parsegate_inter_chunk_latency_seconds_count", model="plain") == 1
    assert value(samples, "parsegate_tool_calls_total", model="plain", parser="none") == 1
    assert not any(labels == frozenset({("model", "plain"), ("parser", "None")}) for _, labels in samples)


def test_fallbacks_and_invalid_arguments_are_counted_by_parser(gateway, client, fake):
    fake.script(MALFORMED_THEN_CUT_CALL)
    fake.finish_reason = "length"
    before = scrape(gateway)
    reply = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS)
    message = reply.choices[0].message
    assert "<tool_call>not json</tool_call>" in message.content
    assert message.tool_calls[0].function.arguments == '{"city": "Pa'

    after = scrape(gateway)
    labels = {"model": "qwen3", "parser": "qwen25"}
    for name in ("tool_calls", "tool_call_fallbacks", "tool_call_invalid_arguments"):
        metric = f"parsegate_{name}_total"
        assert value(after, metric, **labels) - value(before, metric, **labels) == 1, name
    assert value(after, "parsegate_time_to_first_token_seconds_count", model="qwen3") == value(
        before, "parsegate_time_to_first_token_seconds_count", model="qwen3"
    ), "a non-streamed request has no time to first token"


def test_upstream_errors_are_counted_by_kind(gateway, client, fake):
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model="down", messages=MESSAGES)
    fake.error = (503, b'{"error": {"message": "overloaded"}}')
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model="plain", messages=MESSAGES)
    fake.error = None
    fake.delay = 0.5
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model="slow", messages=MESSAGES)
    fake.delay = 0
    fake.cut = True
    with pytest.raises(openai.APIError, match="ended the stream early"):
        list(client.chat.completions.create(model="plain", messages=MESSAGES, stream=True))

    samples = scrape(gateway)
    assert value(samples, "parsegate_upstream_errors_total", model="down", kind="unreachable") == 1
    assert value(samples, "parsegate_requests_total", model="down", status="502", route="/v1/chat/completions") == 1
    assert value(samples, "parsegate_upstream_errors_total", model="plain", kind="backend_5xx") == 1
    assert value(samples, "parsegate_requests_total", model="plain", status="503", route="/v1/chat/completions") == 1
    assert value(samples, "parsegate_upstream_errors_total", model="slow", kind="timeout") == 1
    assert value(samples, "parsegate_requests_total", model="slow", status="504", route="/v1/chat/completions") == 1
    assert value(samples, "parsegate_upstream_errors_total", model="plain", kind="stream_cut") == 1
    assert value(samples, "parsegate_requests_total", model="plain", status="200", route="/v1/chat/completions") == 1


def test_requests_for_unknown_models_share_one_label(gateway, client, fake):
    for name in ("no-such-model", "another-one"):
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model=name, messages=MESSAGES)
    samples = scrape(gateway)
    assert value(samples, "parsegate_requests_total", model="unknown", status="404", route="/v1/chat/completions") == 2
    assert not any("no-such-model" in str(labels) for _, labels in samples)


def test_metrics_stay_open_when_api_keys_are_set(serve, gateway_config):
    guarded = serve(create_app(Config.model_validate({**gateway_config, "server": {"api_keys": ["k"]}})))
    assert httpx.post(f"{guarded}/v1/chat/completions", json={}).status_code == 401
    samples = scrape(guarded)
    assert value(samples, "parsegate_requests_total", model="unknown", status="401", route="/v1/chat/completions") == 1


def test_text_completions_are_counted_as_requests(serve, gateway_config, fake):
    gateway = serve(create_app(Config.model_validate(gateway_config)))
    fake.script("Once upon a time")
    assert httpx.post(f"{gateway}/v1/completions", json={"model": "plain", "prompt": "Hi"}).status_code == 200
    assert httpx.post(f"{gateway}/v1/completions", json={"model": "down", "prompt": "Hi"}).status_code == 502
    samples = scrape(gateway)
    assert value(samples, "parsegate_requests_total", model="plain", status="200", route="/v1/completions") == 1
    assert value(samples, "parsegate_requests_total", model="down", status="502", route="/v1/completions") == 1


def test_text_completion_failures_are_counted_by_kind(serve, gateway_config, fake):
    gateway = serve(create_app(Config.model_validate(gateway_config)))
    assert httpx.post(f"{gateway}/v1/completions", json={"model": "down", "prompt": "Hi"}).status_code == 502
    fake.drop_after = 1
    streamed = httpx.post(f"{gateway}/v1/completions", json={"model": "plain", "prompt": "Hi", "stream": True})
    assert '"upstream_unreachable"' in streamed.text
    samples = scrape(gateway)
    assert value(samples, "parsegate_upstream_errors_total", model="down", kind="unreachable") == 1
    assert value(samples, "parsegate_upstream_errors_total", model="plain", kind="connection_lost") == 1
