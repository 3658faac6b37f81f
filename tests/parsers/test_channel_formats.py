"""The channel formats beside Harmony (Muse Glimmer, Beam): messages
addressed by recipient or channel. Whole conversations of random messages
parse exactly, at any split; calls are named before their arguments end,
and argument values stream as they are written. The format examples are
corpus-style cases in tests/cases/muse.jsonl and beam.jsonl."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import CallArgs, CallStart, Content, Reasoning, make_pipeline, parse_text

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    },
]
# Words and values that look like nothing structural to either format.
words = st.text(alphabet="abc xyz.,!?\n", min_size=1, max_size=12).filter(
    lambda text: text.strip() and " to=" not in text
)
cities = st.text(alphabet="abc xyz.,!?'\"&{}", min_size=1, max_size=12).map(str.strip).filter(bool)


def muse_call(city: str, days: int) -> str:
    return (
        '<atem:invoke name="get_weather">\n'
        f'<atem:parameter name="city">{city}</atem:parameter>\n<atem:parameter name="days">{days}</atem:parameter>\n'
        "</atem:invoke>\n"
    )


@st.composite
def muse_turns(draw):
    """A turn of Muse messages, and the reasoning, content and calls it holds."""
    text, reasoning, content, calls = [], [], [], []
    for i in range(draw(st.integers(1, 5))):
        text.append("<|start|>assistant" if i else "")
        kind = draw(st.sampled_from(["self", "user", "commentary", "tool"]))
        end = draw(st.sampled_from(["<|eom|>", "<|eot|>"]))
        if kind == "tool":
            pairs = draw(st.lists(st.tuples(cities, st.integers(0, 9)), min_size=1, max_size=2))
            body = (
                "<atem:function_calls>\n"
                + "".join(muse_call(city, days) for city, days in pairs)
                + "</atem:function_calls>"
            )
            text.append(f" to=functions.get_weather<|message|>{body}{end}")
            calls += [("get_weather", {"city": city, "days": days}) for city, days in pairs]
        else:
            body = draw(words)
            text.append(f" to={kind}<|message|>{body}{end}")
            (reasoning if kind == "self" else content).append(body)
    return "".join(text), "\n".join(reasoning) or None, "".join(content) or None, calls


def beam_call(city: str, days: int, end: str) -> str:
    return (
        " to=get_weather<|channel|>analysis <|constrain|>xml<|message|>"
        f'<rfl:parameter name="city">\n{city}\n</rfl:parameter><rfl:parameter name="days">\n{days}\n</rfl:parameter>{end}'
    )


@st.composite
def beam_turns(draw):
    """A turn of Beam messages, and the reasoning, content and calls it holds."""
    text, reasoning, content, calls = [], [], [], []
    for i in range(draw(st.integers(1, 5))):
        text.append("<|start|>assistant" if i else "")
        kind = draw(st.sampled_from(["analysis", "final", "tool"]))
        if kind == "tool":
            city, days = draw(cities), draw(st.integers(0, 9))
            text.append(beam_call(city, days, draw(st.sampled_from(["<|call|>", "<|end|>"]))))
            calls.append(("get_weather", {"city": city, "days": days}))
        else:
            body = draw(words)
            end = "<|end|>" if kind == "analysis" else draw(st.sampled_from(["<|return|>", "<|end|>"]))
            text.append(f"<|channel|>{kind}<|message|>{body}{end}")
            (reasoning if kind == "analysis" else content).append(body)
    return "".join(text), "".join(reasoning) or None, "".join(content) or None, calls


@pytest.mark.parametrize("parser, turns", [("muse", muse_turns()), ("beam", beam_turns())], ids=["muse", "beam"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_turns_parse_exactly_at_any_split(parser, turns, data):
    text, reasoning, content, calls = data.draw(turns)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=20))))
    pipeline = make_pipeline(parser, parser, tools=TOOLS)
    events = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        events += pipeline.feed(text[start:end])
    events += pipeline.finish()
    assert ("".join(e.text for e in events if type(e) is Reasoning) or None) == reasoning
    assert ("".join(e.text for e in events if type(e) is Content) or None) == content
    names = [e.name for e in events if type(e) is CallStart]
    arguments = ["".join(e.text for e in events if type(e) is CallArgs and e.index == i) for i in range(len(names))]
    assert list(zip(names, map(orjson.loads, arguments), strict=True)) == calls


def test_muse_call_is_named_before_its_block_ends_and_strings_stream():
    pipeline = make_pipeline("muse", "muse", tools=TOOLS)
    events = pipeline.feed(
        " to=self<|message|>Go.<|eom|><|start|>assistant to=functions.get_weather<|message|><atem:function_calls>\n"
        '<atem:invoke name="get_weather">\n<atem:parameter name="city">Par'
    )
    assert events == [Reasoning("Go."), CallStart(0, "get_weather"), CallArgs(0, '{"city": "'), CallArgs(0, "Par")]
    events = pipeline.feed("is</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>")
    assert [e for e in events if type(e) is CallArgs] == [CallArgs(0, "is"), CallArgs(0, '"'), CallArgs(0, "}")]
    assert pipeline.finish() == []


def test_muse_user_message_streams_without_waiting_for_its_end():
    pipeline = make_pipeline("muse", "muse", tools=TOOLS)
    assert pipeline.feed(" to=user<|message|>Sunny in") == [Content("Sunny in")]
    assert pipeline.feed(" Paris.<|eom|>") == [Content(" Paris.")]


def test_beam_call_is_named_at_its_header_and_strings_stream():
    pipeline = make_pipeline("beam", "beam", tools=TOOLS)
    events = pipeline.feed(
        "<|channel|>analysis<|message|>Go.<|end|><|start|>assistant to=get_weather<|channel|>analysis <|constrain|>xml<|message|>"
    )
    assert events == [Reasoning("Go."), CallStart(0, "get_weather")]
    events = pipeline.feed('<rfl:parameter name="city">\nPar')
    assert events == [CallArgs(0, '{"city": "'), CallArgs(0, "Par")]
    events = pipeline.feed('is\n</rfl:parameter><rfl:parameter name="days">\n2\n</rfl:parameter><|call|>')
    assert [e for e in events if type(e) is CallArgs] == [
        CallArgs(0, "is"),
        CallArgs(0, '"'),
        CallArgs(0, ', "days": '),
        CallArgs(0, "2"),
        CallArgs(0, "}"),
    ]
    assert pipeline.finish() == []


@pytest.mark.parametrize("parser", ["muse", "beam"])
def test_prose_with_to_streams_without_waiting(parser):
    pipeline = make_pipeline(parser, parser, tools=TOOLS)
    assert pipeline.feed("Set it to=5") == [Content("Set it")]
    assert pipeline.feed(" now.") == [Content(" to=5 now.")]
    assert pipeline.finish() == []


def test_muse_typed_value_past_the_buffer_cap_ends_the_call_and_the_rest_is_content():
    digits = "1" * 300
    text = (
        ' to=functions.f<|message|><atem:function_calls>\n<atem:invoke name="f">\n'
        f'<atem:parameter name="n">{digits}</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|> after'
    )
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}}]
    result = parse_text(text, None, "muse", chunk_size=7, max_buffered_chars=100, tools=tools)
    [(name, arguments)] = result.tool_calls
    kept = arguments.removeprefix('{"n": ').removesuffix("}")
    assert name == "f" and kept == "1" * len(kept) and 90 <= len(kept) <= 110
    assert result.content == digits[len(kept) :] + "</atem:parameter>\n after"


MUSE_INVOKE = '<atem:invoke name="get_weather">\n<atem:parameter name="city">Paris</atem:parameter>\n</atem:invoke>\n'


@pytest.mark.parametrize(
    "body, content, calls",
    [
        (f"<atem:function_calls>\n{MUSE_INVOKE}Checking.\n{MUSE_INVOKE}</atem:function_calls>", "\nChecking.\n", 2),
        (
            f"<atem:function_calls>\n<atem:invoke oops>\n{MUSE_INVOKE}</atem:function_calls>",
            "\n<atem:invoke oops>\n",
            1,
        ),
        (f"Note: <atem:function_calls>\n{MUSE_INVOKE}</atem:function_calls>\n", "Note: ", 1),
        (f"<atem:function_calls>\n{MUSE_INVOKE}</atem:function_calls> done", " done", 1),
        (f"<atem:function_calls>\n{MUSE_INVOKE}<atem:inv", "\n<atem:inv", 1),
    ],
    ids=["text_between_invokes", "malformed_invoke", "text_before_block", "text_after_block", "cut_marker_at_end"],
)
@pytest.mark.parametrize("chunk_size", [None, 1, 3])
def test_muse_text_around_the_calls_of_a_tool_message_is_content(body, content, calls, chunk_size):
    text = f" to=functions.get_weather<|message|>{body}<|eom|>"
    result = parse_text(text, None, "muse", chunk_size=chunk_size, tools=TOOLS)
    assert result.content == content
    assert result.tool_calls == [("get_weather", '{"city": "Paris"}')] * calls
