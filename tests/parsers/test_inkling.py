"""Inkling's typed message blocks: reasoning, content and tool calls out of
control-token framing, through the parsers and through the real gateway."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import CallArgs, CallEnd, CallStart, Reasoning, make_pipeline, parse_text
from tests.sdk_clients import openai_client

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
PARIS = '<|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>'
ROME = PARIS.replace("Paris", "Rome")
TURN = (
    "<|content_thinking|>Need the weather.<|end_message|>"
    f"<|message_model|><|content_text|>Asking now.<|end_message|>{PARIS}<|content_model_end_sampling|>"
)


def parsed(text: str, reasoning: str | None = "inkling", **options) -> dict:
    """The parse of `text`, the same whole and one character at a time."""
    whole = parse_text(text, reasoning, "inkling", tools=[WEATHER], **options)
    by_char = parse_text(text, reasoning, "inkling", tools=[WEATHER], chunk_size=1, **options)
    assert by_char.to_json() == whole.to_json()
    return whole.to_json()


@pytest.mark.parametrize("reasoning", ["inkling", None])
def test_blocks_become_reasoning_content_and_calls(reasoning):
    result = parsed(TURN, reasoning)
    assert result["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    if reasoning:
        assert (result["reasoning_content"], result["content"]) == ("Need the weather.", "Asking now.")
    else:  # thinking left in the text is content, its control tokens removed
        assert (result["reasoning_content"], result["content"]) == (None, "Need the weather.Asking now.")


def test_reasoning_held_back_comes_whole_when_its_block_ends():
    pipeline = make_pipeline("inkling", "inkling", tools=[WEATHER], stream_reasoning=False)
    events = [event for char in TURN for event in pipeline.feed(char)] + pipeline.finish()
    assert [event.text for event in events if type(event) is Reasoning] == ["Need the weather."]


def test_a_malformed_invocation_is_content_and_the_calls_around_it_count():
    broken = "<|message_model|>get_weather<|content_invoke_tool_json|>{not json<|end_message|>"
    result = parsed(PARIS + broken + ROME, None)
    assert result["content"] == "get_weather{not json"
    assert [call["arguments"] for call in result["tool_calls"]] == [{"city": "Paris"}, {"city": "Rome"}]


def test_only_a_malformed_invocation_counts_as_a_fallback():
    pipeline = make_pipeline(None, "inkling", tools=[WEATHER])
    pipeline.feed("<|message_model|><|content_text|>Fine.<|end_message|>")
    assert pipeline.outcomes.fallbacks == 0
    pipeline.feed("<|message_model|>get_weather<|content_invoke_tool_json|>{not json<|end_message|>")
    assert pipeline.outcomes.fallbacks == 1


def test_a_text_invocation_is_a_call_named_by_its_header():
    text = "<|message_model|>shell<|content_invoke_tool_text|>ls -l<|end_message|>"
    assert parsed(text)["tool_calls"] == [{"name": "shell", "arguments": {"text": "ls -l"}}]


@pytest.mark.parametrize(
    "text",
    [
        "<|content_invoke_tool_text|>ls -l<|end_message|>",
        "<|message_model|><|content_invoke_tool_text|>ls -l<|end_message|>",
    ],
)
def test_a_text_invocation_without_a_name_is_content(text):
    assert parsed(text) == {"reasoning_content": None, "content": "ls -l", "tool_calls": []}


def test_a_call_the_output_cuts_off_keeps_what_it_streamed():
    cut = PARIS.removesuffix("<|end_message|>")
    assert parsed(cut)["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert parsed(cut.removesuffix('"}}'))["tool_calls"] == [{"name": "get_weather", "arguments": '{"city": "Paris'}]
    assert parsed(cut.removesuffix('"get_weather", "args": {"city": "Paris"}}')) == {
        "reasoning_content": None,
        "content": 'get_weather{"name": ',
        "tool_calls": [],
    }


@pytest.mark.parametrize(
    "head, streamed, tail",
    [
        (
            '<|message_model|>write_file<|content_invoke_tool_json|>{"name": "write_file", "args": {"content": "first part',
            '{"content": "first part',
            '"}}',
        ),
        (
            "<|message_model|>shell<|content_invoke_tool_text|>cat <<EOF\nfirst part",
            '{"text": "cat <<EOF\\nfirst part',
            "",
        ),
    ],
)
def test_arguments_stream_before_the_invocation_ends(head, streamed, tail):
    pipeline = make_pipeline(None, "inkling")
    events = pipeline.feed(head)
    assert type(events[0]) is CallStart and "".join(e.text for e in events[1:] if type(e) is CallArgs) == streamed
    long_part = " and more" * 8000
    assert pipeline.feed(long_part) == [CallArgs(0, long_part)]
    assert pipeline.feed(tail + "<|end_message|>") == [CallArgs(0, '"}'), CallEnd(0)]


def test_what_follows_a_named_call_inside_its_message_is_content():
    text = PARIS.replace("}}<|end_message|>", "}} trailing<|end_message|>")
    text += "<|message_model|>shell<|content_invoke_tool_text|>ls<|content_text|>Listed.<|end_message|>"
    result = parsed(text, None)
    assert result["content"] == " trailingListed."
    assert result["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "shell", "arguments": {"text": "ls"}},
    ]


def test_a_payload_after_a_skipped_one_is_the_call_and_the_skipped_text_content():
    text = '<|message_model|>get_weather<|content_invoke_tool_json|>oops<|content_invoke_tool_json|>{"name": "get_weather", "args": {}}<|end_message|>'
    assert parsed(text, None) == {
        "reasoning_content": None,
        "content": "oops",
        "tool_calls": [{"name": "get_weather", "arguments": {}}],
    }


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway whose model's parsers are picked from its backend name."""
    _, backend_url = fake_backend_server
    model = {"name": "inkling", "backend": {"url": f"{backend_url}/v1", "model": "thinkingmachines/Inkling-Small"}}
    gateway = serve(create_app(Config.model_validate({"models": [model]})))
    return openai_client(gateway)


@pytest.mark.parametrize("chunk_size", [1, 9])
def test_gateway_streams_the_blocks_as_it_answers_whole(client, fake, chunk_size):
    fake.script(TURN.replace(PARIS, PARIS + ROME), chunk_size=chunk_size)
    messages = [{"role": "user", "content": "Weather in Paris and Rome?"}]
    request = {"model": "inkling", "messages": messages, "tools": [WEATHER]}
    reasoning, content, calls, finish = "", "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                calls.setdefault(call.index, [call.function.name, ""])[1] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    expected = [["get_weather", '{"city": "Paris"}'], ["get_weather", '{"city": "Rome"}']]
    assert (reasoning, content, finish) == ("Need the weather.", "Asking now.", "tool_calls")
    assert [calls[i] for i in sorted(calls)] == expected
    assert fake.last_body["skip_special_tokens"] is False
    reply = client.chat.completions.create(**request)
    message = reply.choices[0].message
    assert (message.reasoning_content, message.content) == ("Need the weather.", "Asking now.")
    assert reply.choices[0].finish_reason == "tool_calls"
    assert [[c.function.name, c.function.arguments] for c in message.tool_calls] == expected
