"""InternLM's arguments written as a Python dict: vLLM's InternLM 2 tool
template (examples/tool_chat_template_internlm2_tool.jinja) writes
`function.arguments|string`, and Jinja's `string` filter writes a mapping
as Python's `str` does (`{'city': 'Paris', 'ok': True}`). The `internlm`
parser reads such a dict as the arguments object; JSON arguments stream as
before."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import CallArgs, make_pipeline
from parsers.core.py_repr import MAX_REPR_CHARS
from tests.parsers.test_markers_in_values import calls, parsed_at_every_split
from tests.parsers.test_properties import split_points

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _turn(arguments: str) -> str:
    """The assistant turn as the template writes it (`"arguments": ` then the value)."""
    return f'Checking.<|action_start|><|plugin|>\n{{"name": "get_weather", "arguments": {arguments}}}<|action_end|>'


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "Paris", "days": 2},
        {"ok": True, "no": False, "none": None, "ratio": 0.5, "n": -3},
        {"nested": {"list": [1, "two", {"three": [3]}]}, "empty": {}, "unit": []},
        {"quote": 'it\'s "here"', "brace": "a } b ] c ) d {", "back": "a\\b", "nl": "x\ny\tz", "uni": "café ✓"},
        {"code": "print('<|action_end|>')"},
    ],
)
def test_a_python_dict_is_the_arguments_object(arguments):
    result = parsed_at_every_split(_turn(str(arguments)), "internlm", tools=TOOLS)
    assert calls(result) == [("get_weather", arguments)]
    assert result["content"] == "Checking."


def test_tuples_and_sets_are_arrays():
    result = parsed_at_every_split(_turn("{'pair': (1, 2), 'tags': {'b', 'a'}}"), "internlm", tools=TOOLS)
    assert calls(result) == [("get_weather", {"pair": [1, 2], "tags": ["a", "b"]})]


@pytest.mark.parametrize(
    "written",
    [
        "{'city': paris}",  # a name, not a literal
        "{'data': b'raw'}",  # bytes: no JSON form
        "{'n': float('nan')}",  # a call, not a literal
        "{'x': 1e999}",  # infinite
    ],
)
def test_a_dict_that_is_no_literal_json_can_write_is_kept_as_written(written):
    result = parsed_at_every_split(_turn(written), "internlm", tools=TOOLS)
    assert result["raw"] == [written]


def test_a_dict_past_the_bound_is_kept_as_written():
    written = str({"text": "x" * MAX_REPR_CHARS})
    pipeline = make_pipeline(None, "internlm", tools=TOOLS)
    events = pipeline.feed(_turn(written)) + pipeline.finish()
    assert "".join(event.text for event in events if isinstance(event, CallArgs)) == written


def test_a_dict_cut_off_is_kept_as_written():
    text = '<|action_start|><|plugin|>\n{"name": "get_weather", "arguments": {\'city\': \'Par'
    result = parsed_at_every_split(text, "internlm", tools=TOOLS)
    assert result["raw"] == ["{'city': 'Par"]


def test_json_arguments_still_stream_before_the_call_closes():
    pipeline = make_pipeline(None, "internlm", tools=TOOLS)
    events = pipeline.feed('<|action_start|><|plugin|>\n{"name": "get_weather", "arguments": {"city": "Pa')
    assert "".join(event.text for event in events if isinstance(event, CallArgs)) == '{"city": "Pa'


def test_a_json_dict_whose_first_key_is_double_quoted_is_json():
    written = '{"city": "Paris"}'
    result = parsed_at_every_split(_turn(written), "internlm", tools=TOOLS)
    assert result["raw"] == [written]


json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), json_like, min_size=1, max_size=4), st.data())
def test_any_dict_the_template_writes_comes_back_at_any_split(arguments, data):
    text = _turn(str(arguments))
    cuts = data.draw(split_points(text))
    pipeline = make_pipeline(None, "internlm", tools=TOOLS)
    events = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        events += pipeline.feed(text[start:end])
    events += pipeline.finish()
    written = "".join(event.text for event in events if isinstance(event, CallArgs))
    assert orjson.loads(written) == arguments
