"""The real gateway, driven with the official `openai` client, in front of a
scripted raw-text backend: parsing, streaming, passthrough."""

from __future__ import annotations

import asyncio
import json

import openai
import orjson
import pytest

from gateway.ops.config import ModelConfig
from gateway.upstream.backend import Backend
from tests.fake_backend import BACKEND_KEY, USAGE

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME_TOOL = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
TOOLS = [WEATHER_TOOL, TIME_TOOL]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]

THINK_THEN_ANSWER = "<think>\nThe user asks about Paris.\n</think>\n\nParis is sunny today."
ONE_CALL = (
    "<think>\nI need the weather tool.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)
TWO_CALLS = (
    "<think>\nTwo tools.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "Europe/Paris", "format": "24h"}}\n</tool_call>'
)
TEXT_THEN_CALL = (
    'Let me check that for you.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Nice"}}\n</tool_call>'
)


def collect(stream) -> dict[int, dict]:
    """Accumulate a streamed completion per choice, checking the OpenAI
    streaming shape on the way: role first, a call's id/type/name only on
    its first delta, a finish chunk last."""
    choices: dict[int, dict] = {}
    for chunk in stream:
        data = chunk.to_dict()
        assert data["object"] == "chat.completion.chunk" and data["id"].startswith("chatcmpl-")
        if not data["choices"]:
            for choice in choices.values():
                choice["usage"] = data["usage"]
            continue
        for choice in data["choices"]:
            _accumulate(choices, choice)
    return choices


def _accumulate(choices: dict[int, dict], choice: dict) -> None:
    first = choice["index"] not in choices
    state = choices.setdefault(
        choice["index"], {"reasoning": "", "content": "", "calls": {}, "finish_reason": None, "chunks": 0}
    )
    assert state["finish_reason"] is None, "nothing may follow the finish chunk"
    delta = choice["delta"]
    assert ("role" in delta) == first
    state["chunks"] += 1
    state["reasoning"] += delta.get("reasoning_content") or ""
    state["content"] += delta.get("content") or ""
    for call in delta.get("tool_calls") or ():
        function = call["function"]
        if call["index"] not in state["calls"]:
            assert call["id"].startswith("call_") and len(call["id"]) == 29 and call["type"] == "function"
            state["calls"][call["index"]] = {"id": call["id"], "name": function["name"], "arguments": ""}
        else:
            assert "id" not in call and "type" not in call and "name" not in function
        state["calls"][call["index"]]["arguments"] += function.get("arguments") or ""
    state["finish_reason"] = choice["finish_reason"]


def streamed_result(state: dict) -> dict:
    calls = [state["calls"][index] for index in sorted(state["calls"])]
    return {
        "reasoning_content": state["reasoning"] or None,
        "content": state["content"] or None,
        "tool_calls": [(call["name"], json.loads(call["arguments"])) for call in calls],
        "finish_reason": state["finish_reason"],
    }


def message_result(choice) -> dict:
    message = choice.message
    calls = message.tool_calls or []
    for call in calls:
        assert call.id.startswith("call_") and call.type == "function"
    return {
        "reasoning_content": getattr(message, "reasoning_content", None) or None,
        "content": message.content or None,
        "tool_calls": [(call.function.name, json.loads(call.function.arguments)) for call in calls],
        "finish_reason": choice.finish_reason,
    }


def both_ways(client: openai.OpenAI, fake, text: str, chunk_size: int = 3, **request) -> dict:
    """The same scripted text, non-streamed then streamed: the results must agree."""
    request = {"model": "qwen3", "messages": MESSAGES, **request}
    fake.script(text, chunk_size=chunk_size)
    whole = message_result(client.chat.completions.create(**request).choices[0])
    streamed = collect(client.chat.completions.create(stream=True, **request))
    assert streamed_result(streamed[0]) == whole
    return whole


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 1000])
@pytest.mark.parametrize("text", [THINK_THEN_ANSWER, ONE_CALL, TWO_CALLS, TEXT_THEN_CALL])
def test_streamed_equals_non_streamed(client, fake, text, chunk_size):
    both_ways(client, fake, text, chunk_size, tools=TOOLS)


def test_reasoning_and_content(client, fake):
    result = both_ways(client, fake, THINK_THEN_ANSWER)
    assert result["reasoning_content"].strip() == "The user asks about Paris."
    assert result["content"].strip() == "Paris is sunny today."
    assert result["tool_calls"] == [] and result["finish_reason"] == "stop"


def test_one_tool_call(client, fake):
    result = both_ways(client, fake, ONE_CALL, tools=TOOLS)
    assert result["reasoning_content"].strip() == "I need the weather tool."
    assert result["content"] is None
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["finish_reason"] == "tool_calls"


def test_two_tool_calls_have_their_own_indexes_and_ids(client, fake):
    fake.script(TWO_CALLS, chunk_size=2)
    stream = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True)
    calls = collect(stream)[0]["calls"]
    assert sorted(calls) == [0, 1]
    assert calls[0]["id"] != calls[1]["id"]
    assert [calls[0]["name"], calls[1]["name"]] == ["get_weather", "get_time"]
    assert json.loads(calls[1]["arguments"]) == {"zone": "Europe/Paris", "format": "24h"}
    result = both_ways(client, fake, TWO_CALLS, tools=TOOLS)
    assert result["finish_reason"] == "tool_calls" and len(result["tool_calls"]) == 2


def test_text_before_a_call_is_content(client, fake):
    no_thinking = {"chat_template_kwargs": {"enable_thinking": False}}
    result = both_ways(client, fake, TEXT_THEN_CALL, tools=TOOLS, extra_body=no_thinking)
    assert result["content"].strip() == "Let me check that for you."
    assert result["tool_calls"] == [("get_weather", {"city": "Nice"})]
    assert result["reasoning_content"] is None
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": False}


def test_thinking_on_by_default_reads_a_reply_without_start_marker_as_reasoning(client, fake):
    """As SGLang serves qwen3: thinking mode is on unless the request turns it
    off, and the template may prefill <think>, so the reply starts in reasoning."""
    result = both_ways(client, fake, "The user wants Paris.</think>Sunny.")
    assert result["reasoning_content"] == "The user wants Paris."
    assert result["content"] == "Sunny."


def test_without_tools_call_markup_stays_content(client, fake):
    result = both_ways(client, fake, ONE_CALL)
    assert "<tool_call>" in result["content"] and result["tool_calls"] == []
    assert result["finish_reason"] == "stop"


def test_tool_choice_none_turns_tool_parsing_off(client, fake):
    result = both_ways(client, fake, ONE_CALL, tools=TOOLS, tool_choice="none")
    assert "<tool_call>" in result["content"] and result["tool_calls"] == []
    assert fake.last_body["tool_choice"] == "none" and fake.last_body["tools"] == TOOLS


def test_separate_reasoning_false_keeps_think_in_content(client, fake):
    result = both_ways(client, fake, THINK_THEN_ANSWER, extra_body={"separate_reasoning": False})
    assert result["reasoning_content"] is None
    assert result["content"] == THINK_THEN_ANSWER
    assert "separate_reasoning" not in fake.last_body


def test_stream_reasoning_false_sends_reasoning_in_one_piece(client, fake):
    result = both_ways(client, fake, THINK_THEN_ANSWER, chunk_size=2, extra_body={"stream_reasoning": False})
    assert result["reasoning_content"].strip() == "The user asks about Paris."
    stream = client.chat.completions.create(
        model="qwen3", messages=MESSAGES, stream=True, extra_body={"stream_reasoning": False}
    )
    pieces = [chunk.choices[0].delta.to_dict().get("reasoning_content") for chunk in stream if chunk.choices]
    assert len([piece for piece in pieces if piece]) == 1
    assert "stream_reasoning" not in fake.last_body


def test_finish_reason_length_stays_length(client, fake):
    fake.finish_reason = "length"
    assert both_ways(client, fake, ONE_CALL, tools=TOOLS)["finish_reason"] == "length"


def test_usage_passes_through(client, fake):
    fake.script(THINK_THEN_ANSWER)
    completion = client.chat.completions.create(model="qwen3", messages=MESSAGES)
    usage = completion.usage.to_dict()
    reasoning_tokens = usage.pop("completion_tokens_details")["reasoning_tokens"]  # estimated: test_usage.py
    assert usage == USAGE and reasoning_tokens > 0
    stream = client.chat.completions.create(
        model="qwen3", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    streamed = chunks[-1].usage.to_dict()
    assert streamed.pop("completion_tokens_details") == {"reasoning_tokens": reasoning_tokens}
    assert chunks[-1].choices == [] and streamed == USAGE
    assert all(chunk.usage is None for chunk in chunks[:-1])
    assert fake.last_body["stream_options"] == {"include_usage": True}


def test_two_choices_are_parsed_independently(client, fake):
    fake.script(THINK_THEN_ANSWER, ONE_CALL, chunk_size=3)
    request = {"model": "qwen3", "messages": MESSAGES, "tools": TOOLS, "n": 2}
    whole = client.chat.completions.create(**request).choices
    streamed = collect(client.chat.completions.create(stream=True, **request))
    assert [message_result(choice) for choice in whole] == [streamed_result(streamed[i]) for i in (0, 1)]
    first, second = (message_result(choice) for choice in whole)
    assert first["content"].strip() == "Paris is sunny today." and first["finish_reason"] == "stop"
    assert second["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert second["finish_reason"] == "tool_calls"


def test_request_is_forwarded_untouched_but_for_model(client, fake):
    fake.script("Hi.")
    client.chat.completions.create(
        model="qwen3",
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice="auto",
        temperature=0.25,
        logprobs=True,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20, "custom": {"a": [1]}},
    )
    headers, body = fake.requests[-1]
    assert body["model"] == "fake-qwen3"
    assert body["tools"] == TOOLS and body["tool_choice"] == "auto"
    assert body["temperature"] == 0.25 and body["logprobs"] is True and body["top_k"] == 20
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and body["custom"] == {"a": [1]}
    assert "skip_special_tokens" not in body  # qwen3/qwen25 markers are plain text
    assert headers["authorization"] == f"Bearer {BACKEND_KEY}"


def test_model_without_parsers_passes_text_through(client, fake):
    request = {"model": "plain", "messages": MESSAGES, "tools": TOOLS}
    fake.script(ONE_CALL, chunk_size=5)
    whole = message_result(client.chat.completions.create(**request).choices[0])
    assert whole["content"] == ONE_CALL and whole["reasoning_content"] is None
    assert streamed_result(collect(client.chat.completions.create(stream=True, **request))[0]) == whole
    assert fake.last_body["model"] == "plain" and "authorization" not in fake.requests[-1][0]


def test_skip_special_tokens_is_sent_only_when_needed_and_never_overrides_the_client():
    model = ModelConfig.model_validate({"name": "m", "backend": {"url": "http://127.0.0.1:9/v1", "model": "up"}})
    backend = Backend(model)
    try:
        payload = {"model": "m", "messages": MESSAGES, "separate_reasoning": True, "stream_reasoning": False}
        assert orjson.loads(backend.body(payload, model, parsers_need_special_tokens=False)) == {
            "model": "up",
            "messages": MESSAGES,
        }
        kept = orjson.loads(backend.body(payload, model, parsers_need_special_tokens=True))
        assert kept["skip_special_tokens"] is False
        chosen = orjson.loads(
            backend.body({**payload, "skip_special_tokens": True}, model, parsers_need_special_tokens=True)
        )
        assert chosen["skip_special_tokens"] is True
    finally:
        asyncio.run(backend.client.aclose())


def test_streamed_requests_reuse_the_backend_connection(client, fake):
    fake.script("Hmm.</think>Hello there, streamed.", chunk_size=4)
    for _ in range(3):
        stream = client.chat.completions.create(model="qwen3", messages=MESSAGES, stream=True)
        assert (
            "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
            == "Hello there, streamed."
        )
    assert len(fake.client_ports) == 3 and len(set(fake.client_ports)) == 1
