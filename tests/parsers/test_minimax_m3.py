"""MiniMax M3: `<mm:think>` reasoning switched by `thinking_mode`, and a
stray `</mm:think>` opening a reply that is not reasoning."""

from __future__ import annotations

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import ParseResult, make_pipeline, reasoning_format
from parsers.core.events import CallArgs, CallEnd, CallStart
from tests.gateway.test_gateway_e2e import MESSAGES, both_ways
from tests.lossless import GREEK, assert_lossless_at_any_split
from tests.sdk_clients import openai_client


def parse(text: str, pieces: int | None = None, **options) -> tuple[str | None, str | None]:
    """(reasoning, content), fed in one piece or one character at a time."""
    pipeline = make_pipeline("minimax-m3", None, **options)
    result = ParseResult()
    for piece in [text] if pieces is None else list(text):
        result.add(pipeline.feed(piece))
    result.add(pipeline.finish())
    return result.reasoning_content, result.content


@pytest.mark.parametrize(
    ("kwargs", "thinking"),
    [
        ({"thinking_mode": "enabled"}, True),
        ({"thinking_mode": "disabled"}, False),
        ({"thinking_mode": True}, False),
        ({"enable_thinking": True}, False),
        ({}, False),
    ],
)
def test_only_thinking_mode_enabled_starts_in_reasoning(kwargs, thinking):
    assert reasoning_format("minimax-m3").thinking_enabled(kwargs) is thinking
    want = ("Hmm.", "Answer") if thinking else (None, "Hmm.</mm:think>Answer")
    assert parse("Hmm.</mm:think>Answer", chat_template_kwargs=kwargs) == want


def test_other_formats_take_any_true_switch_value():
    assert reasoning_format("qwen3").thinking_enabled({"enable_thinking": "enabled"}) is True
    assert reasoning_format("qwen3").thinking_enabled({"enable_thinking": 0}) is False


@pytest.mark.parametrize("pieces", [None, 1], ids=["one-shot", "1-char"])
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("</mm:think>Answer", (None, "Answer")),
        ("\n </mm:think>\n\nAnswer", (None, "\n\nAnswer")),
        ("  Answer</mm:think>", (None, "  Answer</mm:think>")),
        ("</mm:thin", (None, "</mm:thin")),
        ("\n\n", (None, "\n\n")),
        ("<mm:think>Hmm.</mm:think>Answer", ("Hmm.", "Answer")),
        ("</mm:think><mm:think>Hmm.</mm:think>Answer", ("Hmm.", "Answer")),
    ],
)
def test_a_stray_closer_opening_a_reply_without_reasoning_is_dropped(text, want, pieces):
    assert parse(text, pieces) == want


def test_in_reasoning_a_leading_closer_ends_empty_reasoning():
    assert parse("</mm:think>Answer", chat_template_kwargs={"thinking_mode": "enabled"}) == (None, "Answer")


N = "]<]minimax[>["
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "lines": {"type": "array", "items": {"type": "integer"}}},
            },
        },
    }
]


def test_calls_stream_name_first_then_string_text_as_it_is_written():
    pipeline = make_pipeline(None, "minimax-m3", tools=TOOLS)
    fed = [
        f'{N}<tool_call>{N}<invoke name="write">',
        f"{N}<text>Hello, ",
        "world  ",
        f"{N}</text>{N}<lines>{N}<item>1",
        f"{N}</item>{N}</lines>",
        f"{N}</invoke>{N}</tool_call>",
    ]
    seen = []
    for piece in fed:
        events = pipeline.feed(piece)
        started = [event.name for event in events if isinstance(event, CallStart)]
        arguments = "".join(event.text for event in events if isinstance(event, CallArgs))
        seen.append((started, arguments, any(isinstance(event, CallEnd) for event in events)))
    assert seen == [
        (["write"], "", False),
        ([], '{"text": "Hello,', False),
        ([], " world", False),
        ([], '", "lines": ', False),
        ([], "[1]", False),
        ([], "}", True),
    ]


@pytest.fixture(scope="module")
def m3_client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway serving one MiniMax M3 model on the fake backend."""
    _, backend_url = fake_backend_server
    model = {
        "name": "m3",
        "backend": {"url": f"{backend_url}/v1"},
        "reasoning_parser": "minimax-m3",
        "tool_call_parser": "minimax-m3",
    }
    gateway = serve(create_app(Config.model_validate({"models": [model]})))
    return openai_client(gateway)


THINK_THEN_CALL = f'Need the weather.</mm:think>{N}<tool_call>{N}<invoke name="get_weather">{N}<city>Paris{N}</city>{N}</invoke>{N}</tool_call>'


def test_calls_are_read_in_a_request_without_tools(m3_client, fake):
    result = both_ways(
        m3_client,
        fake,
        THINK_THEN_CALL,
        model="m3",
        messages=MESSAGES,
        extra_body={"chat_template_kwargs": {"thinking_mode": "enabled"}},
    )
    assert result["reasoning_content"] == "Need the weather."
    assert result["content"] is None
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["finish_reason"] == "tool_calls"


def test_tool_choice_none_leaves_the_call_text_in_content(m3_client, fake):
    result = both_ways(
        m3_client,
        fake,
        THINK_THEN_CALL,
        model="m3",
        tool_choice="none",
        extra_body={"chat_template_kwargs": {"thinking_mode": "enabled"}},
    )
    assert result["reasoning_content"] == "Need the weather."
    assert result["content"] == THINK_THEN_CALL.split("</mm:think>")[1]
    assert result["tool_calls"] == [] and result["finish_reason"] == "stop"


OPENING = f'{N}<tool_call>{N}<invoke name="write">'
NOISE = st.one_of(st.text(alphabet=GREEK, min_size=1, max_size=5), st.sampled_from([" ", "\n", "<", N, f"{N} ", N[:5]]))
ELEMENTS = st.recursive(  # parameters nested at random, their close tags sometimes missing
    NOISE,
    lambda inner: st.tuples(
        st.sampled_from(["text", "lines", "item", "note"]), st.lists(inner, max_size=4), st.booleans()
    ).map(lambda element: f"{N}<{element[0]}>" + "".join(element[1]) + (f"{N}</{element[0]}>" if element[2] else "")),
    max_leaves=12,
)
CALLS = st.tuples(
    st.lists(ELEMENTS, max_size=4), st.sampled_from(["", f"{N}</invoke>", f"{N}</invoke>{N}</tool_call>"])
).map(lambda call: OPENING + "".join(call[0]) + call[1])
STRAY_TAGS = st.sampled_from(["</tool_call>", "</invoke>", "</item>", "</other>", "<tool_call>"]).map(N.__add__)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(CALLS, NOISE, STRAY_TAGS), min_size=1, max_size=6), data=st.data())
def test_any_mix_of_tags_loses_no_text_and_parses_alike_at_any_split(pieces, data):
    text = "".join(pieces)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    assert_lossless_at_any_split(text, cuts, "minimax-m3", TOOLS)


def test_a_lone_angle_bracket_before_the_next_token_is_text():
    """`<α` then a namespace token: the `>` inside the token closes no tag
    of `<α`'s (it used to, and `α` and the token vanished as a tag name)."""
    text = f"{OPENING}{N}<lines>{N}<α{N}</invoke>"
    result = assert_lossless_at_any_split(text, list(range(len(text))), "minimax-m3", TOOLS)
    assert result.tool_calls == [("write", f'{{"lines": "{N}<α"}}')]
