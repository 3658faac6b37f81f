"""Property tests: any split of a generated model output parses like one-shot,
and well-formed calls come back exactly as generated."""

from __future__ import annotations

import html

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.workloads import distinct_tool_parsers
from parsers import ParseResult, make_pipeline, parse_text, tool_format
from parsers.pipeline import end_of_turn_tokens
from tests.parsers.test_split_invariance import marker_strings

# Prose that likes to look like markers: partial tags, angle brackets, braces.
# What the qwen3 + qwen25 pipeline reads as structure: its markers and the
# end-of-turn tokens it removes.
MARKERS = ("<tool_call>", "</tool_call>", "<think>", "</think>", *end_of_turn_tokens("qwen3", "qwen25"))


def _without(text: str, markers) -> str:
    while any(marker in text for marker in markers):
        for marker in markers:
            text = text.replace(marker, "")
    return text


def _without_markers(text: str) -> str:
    return _without(text, MARKERS)


prose = (
    st.lists(
        st.sampled_from(list('ab <>/{}"\\\n _') + ["<think", "</thi", "<tool_", "</tool_call", "<tool_call"]),
        max_size=12,
    )
    .map("".join)
    .map(_without_markers)
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=10), json_values, max_size=4)
names = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
separators = st.sampled_from(["", "\n", " ", "\n\n"])


@st.composite
def model_outputs(draw):
    """(text, expected calls) for `<think>` reasoning + Qwen-style calls."""
    reasoning = draw(prose)
    parts = ["<think>", reasoning, "</think>", draw(separators), draw(prose)]
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        name, args = draw(names), draw(arguments)
        calls.append((name, args))
        body = orjson.dumps({"name": name, "arguments": args}).decode()
        parts += [draw(separators), "<tool_call>", draw(separators), body, draw(separators), "</tool_call>"]
    return "".join(parts), reasoning, calls


@st.composite
def split_points(draw, text):
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=20))
    return sorted(set(cuts))


def parse_in_pieces(text: str, cuts: list[int]):
    pipeline = make_pipeline("qwen3", "qwen25")
    result = ParseResult()
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        result.add(pipeline.feed(text[start:end]))
    result.add(pipeline.finish())
    return result


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_split_equals_one_shot_and_calls_round_trip(data):
    text, reasoning, calls = data.draw(model_outputs())
    cuts = data.draw(split_points(text))
    one_shot = parse_text(text, "qwen3", "qwen25")
    split = parse_in_pieces(text, cuts)
    assert split.to_json() == one_shot.to_json()
    assert split.tool_calls == one_shot.tool_calls
    assert (one_shot.reasoning_content or "") == reasoning
    assert [(name, orjson.loads(args)) for name, args in one_shot.tool_calls] == calls
    for marker in MARKERS:
        assert marker not in (one_shot.content or "")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.data())
def test_arbitrary_text_loses_nothing_without_markers(text, data):
    """Text with no complete marker comes back verbatim as content, however split."""
    text = _without_markers(text)
    cuts = data.draw(split_points(text))
    result = parse_in_pieces(text, cuts)
    assert result.tool_calls == []
    assert (result.content or "") == text


TOOL_FORMATS = distinct_tool_parsers()


@st.composite
def rendered_calls(draw, parser: str):
    """Prose and calls written the way `parser`'s models write them."""
    fmt = tool_format(parser)
    # A model cannot write its format's own structural tokens inside a value
    # (`<|return|>` ends a harmony message wherever it stands).
    tokens = sorted(marker_strings(fmt), key=len, reverse=True)
    values = st.text(max_size=12).map(lambda text: _without(text, tokens)) | st.integers(-99, 99)
    calls = [
        (draw(names), draw(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), values, max_size=3)))
        for _ in range(draw(st.integers(1, 2)))
    ]
    text = draw(st.sampled_from(["", "Sure. ", "Let me check.\n"]))
    text += "".join(fmt.render_call(name, orjson.dumps(args).decode()) for name, args in calls)
    return text, calls


@pytest.mark.parametrize("parser", TOOL_FORMATS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_format_parses_its_own_calls_at_any_split(parser, data):
    text, calls = data.draw(rendered_calls(parser))
    cuts = data.draw(split_points(text))
    one_shot = parse_text(text, None, parser)
    split = ParseResult()
    pipeline = make_pipeline(None, parser)
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        split.add(pipeline.feed(text[start:end]))
    split.add(pipeline.finish())
    assert split.to_json() == one_shot.to_json()
    assert [name for name, _ in one_shot.tool_calls] == [name for name, _ in calls]
    assert [set(orjson.loads(args)) for _, args in one_shot.tool_calls] == [set(args) for _, args in calls]


@st.composite
def pythonic_outputs(draw):
    """(text, expected calls) for a pythonic call list amid prose with brackets."""
    calls = [
        (draw(names), draw(st.dictionaries(names, json_values, max_size=4))) for _ in range(draw(st.integers(1, 3)))
    ]
    body = ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls)
    before = draw(st.sampled_from(["", "See [docs](u). ", "[1, 2] "]))
    return before + "[" + body + "]" + draw(st.sampled_from(["", " done", " [x]"])), calls


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pythonic_calls_round_trip_in_any_split(data):
    text, calls = data.draw(pythonic_outputs())
    cuts = data.draw(split_points(text))
    one_shot = parse_text(text, None, "pythonic")
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    pipeline, split = make_pipeline(None, "pythonic"), ParseResult()
    for piece in pieces:
        split.add(pipeline.feed(piece))
    split.add(pipeline.finish())
    assert split.to_json() == one_shot.to_json()
    assert [(name, orjson.loads(args)) for name, args in one_shot.tool_calls] == calls


html_text = st.lists(
    st.sampled_from(["&", "amp", "lt", "not", ";", "#", "x", "X", "3", "8", "26", "a", " ", "\n", "é"]), max_size=16
).map("".join)


@settings(max_examples=200, deadline=None)
@given(html_text, st.data())
def test_html_escaped_values_decode_the_same_at_any_split(value, data):
    """MiMo's HTML-escaped string values stream decoded, whatever the split."""
    tools = [
        {"type": "function", "function": {"name": "note", "parameters": {"properties": {"text": {"type": "string"}}}}}
    ]
    text = f"<tool_call>\n<function=note>\n<parameter=text>{value}</parameter>\n</function>\n</tool_call>"
    cuts = data.draw(split_points(text))
    pipeline, split = make_pipeline(None, "mimo", tools=tools), ParseResult()
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        split.add(pipeline.feed(text[start:end]))
    split.add(pipeline.finish())
    assert [(name, orjson.loads(args)) for name, args in split.tool_calls] == [("note", {"text": html.unescape(value)})]
