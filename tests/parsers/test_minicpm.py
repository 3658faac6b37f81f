"""MiniCPM tool calls are plain-text XML: random elements, cut short or
malformed amid prose, lose no text and parse alike at any split, and a
call to an offered tool streams its name before its arguments end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import ParseResult, make_pipeline
from parsers.core.events import CallArgs, CallStart
from tests.lossless import GREEK, assert_lossless_at_any_split

TOOLS = [
    {
        "type": "function",
        "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    }
]
WORDS = st.text(alphabet=GREEK, min_size=1, max_size=5)
NOISE = st.one_of(
    WORDS,
    st.sampled_from(
        [
            " ",
            "\n",
            "<",
            "&",
            "&amp;",
            "]]>",
            "<![CDATA[",
            "<func",
            "<function",
            "<param",
            "</param>",
            "</function>",
            "<functions>",
        ]
    ),
)
VALUES = st.one_of(WORDS, WORDS.map(lambda word: f"<![CDATA[{word}</param>]]>"))
PARAMETERS = st.tuples(st.sampled_from(['"q"', "'n'", "q", ""]), VALUES, st.booleans()).map(
    lambda p: f"<param name={p[0]}>{p[1]}" + ("</param>" if p[2] else "")
)
ELEMENTS = st.tuples(
    st.sampled_from(['"search"', "'search'", '"other"']),
    st.lists(st.one_of(PARAMETERS, NOISE), max_size=3),
    st.booleans(),
).map(lambda e: f"<function name={e[0]}>" + "".join(e[1]) + ("</function>" if e[2] else ""))


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(ELEMENTS, NOISE), min_size=1, max_size=6), data=st.data())
def test_any_mix_of_elements_loses_no_text_and_parses_alike_at_any_split(pieces, data):
    text = "".join(pieces)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    one_shot = assert_lossless_at_any_split(text, cuts, "minicpm5", TOOLS)
    assert all(name == "search" for name, _ in one_shot.tool_calls)


def test_a_call_streams_its_name_and_value_before_the_element_ends():
    pipeline = make_pipeline(None, "minicpm5", tools=TOOLS)
    events = pipeline.feed('<function name="search"><param name="q"><![CDATA[a < b')
    assert events[0] == CallStart(0, "search")
    assert "".join(event.text for event in events if isinstance(event, CallArgs)) == '{"q": "a < b'


# What MiniCPM 5 writes after each of its template's generation prompts
# (tests/fixtures/chat_templates/openbmb-MiniCPM5-1B.jinja): `enable_thinking`
# unset opens nothing, `true` opens `<think>`, `false` closes an empty one.
CALL = '<function name="search"><param name="q">tides</param></function>'
THINKING_REPLIES = [
    ({}, "Let me look.\n" + CALL, None, "Let me look.\n"),
    ({}, "<think>\nTides.\n</think>\n\nLet me look.\n" + CALL, "\nTides.\n", "\n\nLet me look.\n"),
    ({"enable_thinking": True}, "Tides.\n</think>\n\nLet me look.\n" + CALL, "Tides.\n", "\n\nLet me look.\n"),
    ({"enable_thinking": False}, "Let me look.\n" + CALL, None, "Let me look.\n"),
]


@pytest.mark.parametrize(("kwargs", "text", "reasoning", "content"), THINKING_REPLIES)
def test_a_reply_is_reasoning_only_where_the_template_or_the_model_opens_it(kwargs, text, reasoning, content):
    """Left unset, `enable_thinking` opens no `<think>`: the text before a
    call is content, not reasoning; whole and at every split alike."""

    def parsed(cuts):
        pipeline = make_pipeline("minicpm5", "minicpm5", tools=TOOLS, chat_template_kwargs=kwargs)
        result = ParseResult()
        bounds = [0, *cuts, len(text)]
        for start, end in zip(bounds, bounds[1:], strict=False):
            result.add(pipeline.feed(text[start:end]))
        result.add(pipeline.finish())
        return result.to_json()

    whole = parsed([])
    assert (whole["reasoning_content"], whole["content"]) == (reasoning, content)
    assert [(call["name"], call["arguments"]) for call in whole["tool_calls"]] == [("search", {"q": "tides"})]
    for cut in range(1, len(text)):
        assert parsed([cut]) == whole
