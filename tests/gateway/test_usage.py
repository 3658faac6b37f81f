"""The backend's `usage` as every surface reports it: malformed usage read
as absent (never a 500 or a stream cut without its final event), and the
reasoning tokens of a reply whose reasoning parsegate separated."""

from __future__ import annotations

import logging

import anthropic
import httpx
import openai
import orjson
import pytest

from gateway.upstream import usage as usage_module
from tests.sdk_clients import anthropic_client, openai_client

ASK = [{"role": "user", "content": "Hi"}]
REASONING = "Need weather."
REPLY = f"<think>{REASONING}</think>It is sunny."
MALFORMED = {
    "details not an object": {"prompt_tokens": 7, "completion_tokens": 11, "prompt_tokens_details": "n/a"},
    "count not a number": {"prompt_tokens": "a", "completion_tokens": 11, "total_tokens": 18},
    "usage a list": [7, 11],
    "negative and huge counts": {"prompt_tokens": -1, "completion_tokens": 2**63, "total_tokens": 18},
    "details count not a number": {
        "prompt_tokens": 7,
        "completion_tokens": 11,
        "prompt_tokens_details": {"cached_tokens": "x"},
    },
}


@pytest.fixture
def sdks(gateway_url) -> tuple[openai.OpenAI, anthropic.Anthropic]:
    return (
        openai_client(gateway_url),
        anthropic_client(gateway_url),
    )


def sse_types(response: httpx.Response) -> list[str]:
    return [line[len("event: ") :] for line in response.text.splitlines() if line.startswith("event: ")]


@pytest.mark.parametrize("usage", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_usage_is_read_as_absent_on_every_surface(gateway_url, sdks, fake, usage):
    fake.usage = usage
    fake.script(REPLY)
    openai_sdk, anthropic_sdk = sdks

    response = openai_sdk.responses.create(model="qwen3", input="Hi")
    assert response.status == "completed" and response.output_text == "It is sunny."
    if isinstance(usage, dict):
        assert response.usage.input_tokens == (7 if usage.get("prompt_tokens") == 7 else 0)
        assert response.usage.input_tokens_details.cached_tokens == 0
    else:
        assert response.usage is None  # no usage, as from a backend that sends none
    streamed = list(openai_sdk.responses.create(model="qwen3", input="Hi", stream=True))
    assert streamed[-1].type == "response.completed"
    assert streamed[-1].response.usage == response.usage

    message = anthropic_sdk.messages.create(model="qwen3", max_tokens=64, messages=ASK)
    assert message.content[-1].text == "It is sunny."
    assert message.usage.input_tokens >= 0 and message.usage.cache_read_input_tokens == 0
    body = {"model": "qwen3", "max_tokens": 64, "messages": ASK, "stream": True}
    events = sse_types(httpx.post(f"{gateway_url}/v1/messages", json=body, timeout=10))
    assert events[-2:] == ["message_delta", "message_stop"]

    chat = openai_sdk.chat.completions.create(model="qwen3", messages=ASK)
    chunks = list(
        openai_sdk.chat.completions.create(
            model="qwen3", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
    )
    for reported in (chat.usage, chunks[-1].usage if chunks[-1].usage else None):
        if reported is None:
            assert not isinstance(usage, dict)
            continue
        fields = reported.model_dump(exclude_none=True)
        assert all(
            type(count) is int and 0 <= count < 2**53 for key, count in fields.items() if key.endswith("_tokens")
        )
        assert "prompt_tokens_details" not in fields or isinstance(fields["prompt_tokens_details"], dict)


def test_malformed_usage_is_logged_once_per_model(gateway_url, sdks, fake, caplog, monkeypatch):
    monkeypatch.setattr(usage_module, "_logged", set())
    fake.usage = MALFORMED["details not an object"]
    openai_sdk, _ = sdks
    with caplog.at_level(logging.WARNING, logger="parsegate.usage"):
        openai_sdk.responses.create(model="qwen3", input="Hi")
        openai_sdk.responses.create(model="qwen3", input="Hi")
    lines = [record.getMessage() for record in caplog.records if record.name == "parsegate.usage"]
    assert lines == [
        "the backend for model 'qwen3' sent a usage object with fields of unexpected types "
        "(prompt_tokens: int, completion_tokens: int, prompt_tokens_details: str); "
        "they are read as absent (logged once per model)"
    ]


def test_more_cached_than_prompt_tokens_never_counts_negative_input_on_messages(sdks, fake):
    fake.usage = {"prompt_tokens": 3, "completion_tokens": 11, "prompt_tokens_details": {"cached_tokens": 5}}
    _, anthropic_sdk = sdks
    usage = anthropic_sdk.messages.create(model="qwen3", max_tokens=64, messages=ASK).usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (0, 3, 11)


def expected_reasoning_tokens(completion_tokens: int) -> int:
    """docs/agents.md: completion tokens × reasoning characters / generated characters."""
    return round(completion_tokens * len(REASONING) / len(REPLY))


@pytest.mark.parametrize("chunk_size", [3, 1000])
def test_reasoning_tokens_are_estimated_when_the_backend_cannot_count_them(gateway_url, sdks, fake, chunk_size):
    fake.script(REPLY, chunk_size=chunk_size)
    openai_sdk, _ = sdks
    estimate = expected_reasoning_tokens(11)
    assert estimate > 0
    whole = openai_sdk.responses.create(model="qwen3", input="Hi")
    assert whole.output[0].type == "reasoning" and whole.output[0].summary[0].text == REASONING
    assert whole.usage.output_tokens_details.reasoning_tokens == estimate
    streamed = list(openai_sdk.responses.create(model="qwen3", input="Hi", stream=True))
    assert streamed[-1].response.usage.output_tokens_details.reasoning_tokens == estimate
    chat = openai_sdk.chat.completions.create(model="qwen3", messages=ASK)
    assert chat.usage.completion_tokens_details.reasoning_tokens == estimate
    chunks = list(
        openai_sdk.chat.completions.create(
            model="qwen3", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[-1].usage.completion_tokens_details.reasoning_tokens == estimate


def test_the_backends_own_reasoning_count_wins_and_no_reasoning_adds_none(gateway_url, sdks, fake):
    openai_sdk, _ = sdks
    fake.script(REPLY)
    fake.usage = {"prompt_tokens": 7, "completion_tokens": 11, "completion_tokens_details": {"reasoning_tokens": 4}}
    assert openai_sdk.responses.create(model="qwen3", input="Hi").usage.output_tokens_details.reasoning_tokens == 4
    fake.script("It is sunny.")
    fake.usage = {"prompt_tokens": 7, "completion_tokens": 11, "total_tokens": 18}
    plain = openai_sdk.responses.create(model="plain", input="Hi")
    assert plain.output_text == "It is sunny." and plain.usage.output_tokens_details.reasoning_tokens == 0
    raw = httpx.post(f"{gateway_url}/v1/chat/completions", json={"model": "plain", "messages": ASK}).json()
    assert raw["usage"] == fake.usage
    assert orjson.dumps(raw["usage"])  # as the backend sent it
