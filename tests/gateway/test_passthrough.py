"""Request fields reach the backend untouched; usage and logprobs come back,
streamed and not (real gateway, official `openai` client)."""

from __future__ import annotations

import pytest

from tests.fake_backend import USAGE
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TOOLS

RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "answer", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}},
}


@pytest.mark.parametrize("stream", [False, True])
def test_sampling_and_output_fields_reach_the_backend_untouched(client, fake, stream):
    fake.script("Hi.")
    sent = {
        "logprobs": True,
        "top_logprobs": 3,
        "stop": ["</answer>", "\n\n"],
        "seed": 1234,
        "response_format": RESPONSE_FORMAT,
        "max_tokens": 50,
        "max_completion_tokens": 60,
        "temperature": 0.0,
        "presence_penalty": 0.5,
        "logit_bias": {"1234": -100},
        "user": "user-7",
    }
    extra = {"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "custom_field": {"nested": [1, {"x": None}]}}
    if stream:
        sent["stream_options"] = {"include_usage": True, "continuous_usage_stats": False}
    result = client.chat.completions.create(model="qwen3", messages=MESSAGES, stream=stream, extra_body=extra, **sent)
    if stream:
        list(result)
    body = fake.last_body
    assert {key: body[key] for key in sent} == sent
    assert {key: body[key] for key in extra} == extra
    assert body["messages"] == MESSAGES and body["stream"] is stream


def test_usage_comes_back_streamed_and_not(client, fake):
    """As the backend sent it, with the reasoning tokens filled in (their
    value is tested in test_usage.py)."""
    fake.script(ONE_CALL)
    usage = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS).usage.to_dict()
    assert usage.pop("completion_tokens_details")["reasoning_tokens"] > 0
    assert usage == USAGE
    stream = client.chat.completions.create(
        model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    )
    usages = [chunk.usage.to_dict() for chunk in stream if chunk.usage]
    assert len(usages) == 1 and usages[0].pop("completion_tokens_details")["reasoning_tokens"] > 0
    assert usages == [USAGE]


def test_logprobs_come_back_for_every_token_streamed_and_not(client, fake):
    fake.script(ONE_CALL, chunk_size=3)
    request = {"model": "qwen3", "messages": MESSAGES, "tools": TOOLS, "logprobs": True, "top_logprobs": 2}
    whole = client.chat.completions.create(**request).choices[0]
    assert "".join(token.token for token in whole.logprobs.content) == ONE_CALL
    assert whole.message.tool_calls[0].function.name == "get_weather"
    tokens = []
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            if choice.logprobs is not None:
                tokens += [token.token for token in choice.logprobs.content]
    assert "".join(tokens) == ONE_CALL  # held-back marker text included, in order
