"""Kimi K3 (XTML): the channel rules the corpus does not pin, at every
split, and call ids, streamed and not, through the real gateway."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import CallArgs, CallStart, make_pipeline, parse_text
from tests.gateway.test_gateway_formats import HISTORY, SEARCH, WEATHER, streamed
from tests.sdk_clients import openai_client

TWO_CALLS = (
    "Need two lookups.<|close|>think<|sep|>"
    "<|open|>response<|sep|>Checking.<|close|>response<|sep|>"
    "<|open|>tools<|sep|>\n"
    '<|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
    "<|close|>call<|sep|>\n"
    '<|open|>call tool="search" index="2"<|sep|>'
    '<|open|>argument key="query" type="string"<|sep|>x<|close|>argument<|sep|>'
    "<|close|>call<|sep|>\n"
    "<|close|>tools<|sep|><|close|>message<|sep|>"
)


def parsed_at_every_split(text: str, **options) -> tuple[str | None, str | None]:
    """(reasoning, content) of the K3 reasoning stage, the same one-shot and
    for every cut of the text in two, and one character at a time."""
    one_shot = parse_text(text, "kimi_k3", **options)
    expected = (one_shot.reasoning_content, one_shot.content)
    for size in (1, *range(2, len(text), 3)):
        result = parse_text(text, "kimi_k3", chunk_size=size, **options)
        assert (result.reasoning_content, result.content) == expected, f"chunk size {size}"
    return expected


@pytest.mark.parametrize(
    "text, reasoning, content",
    [
        ("Hmm.<|close|>think<|sep|>Answer", "Hmm.", "Answer"),
        ("Hmm.<|close|>think<|open|>response<|sep|>Answer<|close|>response<|sep|>", "Hmm.", "Answer"),
        (
            "<|open|>think<|sep|>Hmm.<|close|>think<|sep|><|open|>response<|sep|>Answer<|close|>response",
            "Hmm.",
            "Answer",
        ),
        ("Hmm.<|close|>think<|sep|>x <|close|>", "Hmm.", "x "),
        ("Hmm.<|close|>think<|sep|>x <", "Hmm.", "x <"),
        ("Hmm.<|close|>think<|sep|>a <3 b <| c", "Hmm.", "a <3 b <| c"),
    ],
    ids=["plain-content", "think-close-without-sep", "cut-response-close", "cut-control-token", "angle-tail", "angles"],
)
def test_channels_split_the_same_at_every_cut(text, reasoning, content):
    assert parsed_at_every_split(text, force_reasoning=True) == (reasoning, content)


def test_a_reply_without_think_close_is_never_sent_twice():
    # SGLang's QUIRK replays the streamed reasoning as content; here the
    # response close ends reasoning and the text is given once.
    text = "Paris is sunny.<|close|>response<|sep|><|close|>message<|sep|>"
    assert parsed_at_every_split(text, force_reasoning=True) == ("Paris is sunny.", None)


def test_a_reply_opening_the_response_channel_is_content_thinking_on_or_off():
    text = "<|open|>response<|sep|>Hi there.<|close|>response<|sep|><|close|>message<|sep|>"
    assert parsed_at_every_split(text, chat_template_kwargs={"thinking": False}) == (None, "Hi there.")
    assert parsed_at_every_split(text, chat_template_kwargs={}) == (None, "Hi there.")


def test_thinking_is_on_unless_the_request_turns_it_off():
    text = "Hmm.<|close|>think<|sep|>Answer"
    assert parsed_at_every_split(text) == ("Hmm.", "Answer")
    assert parsed_at_every_split(text, chat_template_kwargs={}) == ("Hmm.", "Answer")
    # Off, the text is content; the stray think close is a special token, never content.
    assert parsed_at_every_split(text, chat_template_kwargs={"thinking": False}) == (None, "Hmm.Answer")


def test_unstreamed_reasoning_arrives_in_one_piece():
    pipeline = make_pipeline("kimi_k3", None, force_reasoning=True, stream_reasoning=False)
    events = [event for piece in ("Long ", "thought", "<|close|>think<|sep|>Done") for event in pipeline.feed(piece)]
    assert [type(event).__name__ for event in events] == ["Reasoning", "Content"]
    assert (events[0].text, events[1].text) == ("Long thought", "Done")


def test_calls_stream_name_first_then_argument_fragments():
    pipeline = make_pipeline("kimi_k3", "kimi_k3", force_reasoning=True)
    events = [event for start in range(0, len(TWO_CALLS), 5) for event in pipeline.feed(TWO_CALLS[start : start + 5])]
    events += pipeline.finish()
    starts = [event for event in events if type(event) is CallStart]
    assert [(event.index, event.name) for event in starts] == [(0, "get_weather"), (1, "search")]
    first_args = [event.text for event in events if type(event) is CallArgs and event.index == 0]
    assert len(first_args) > 2 and "".join(first_args) == '{"city": "Paris"}'


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    config = {
        "models": [
            {"name": "kimi-k3", "backend": {"url": f"{fake_url}/v1", "model": "moonshotai/Kimi-K3"}},
        ]
    }
    url = serve(create_app(Config.model_validate(config)))
    return openai_client(url)


def test_k3_ids_count_the_conversations_earlier_calls(client, fake):
    fake.script(TWO_CALLS, chunk_size=3)
    request = {"model": "kimi-k3", "messages": HISTORY, "tools": [WEATHER, SEARCH]}
    reply = client.chat.completions.create(**request)
    message = reply.choices[0].message
    expected_calls = [("get_weather:2", "get_weather", '{"city": "Paris"}'), ("search:3", "search", '{"query": "x"}')]
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == expected_calls
    assert (message.reasoning_content, message.content) == ("Need two lookups.", "Checking.")
    assert reply.choices[0].finish_reason == "tool_calls"
    assert fake.last_body["skip_special_tokens"] is False
    assert streamed(client, **request) == ("Need two lookups.", "Checking.", expected_calls, "tool_calls")
