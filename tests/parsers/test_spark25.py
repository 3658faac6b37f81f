"""Spark 2.5 writes `null` for a missing value whatever the parameter's
type: a string value is held back only while it can still be that word."""

from __future__ import annotations

from parsers import make_pipeline
from parsers.core.events import CallArgs, CallStart

TOOLS = [
    {
        "type": "function",
        "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
    }
]
OPENING = "<tool_call>search\n<arg_key>query</arg_key><arg_value>"


def arguments(events) -> str:
    return "".join(event.text for event in events if isinstance(event, CallArgs))


def test_a_value_that_may_still_be_null_is_held_then_streams():
    pipeline = make_pipeline(None, "spark25", tools=TOOLS)
    first = pipeline.feed(OPENING + "Nu")
    assert first[0] == CallStart(0, "search") and arguments(first) == '{"query": '
    assert arguments(pipeline.feed("ll")) == ""
    assert arguments(pipeline.feed("s and")) == '"Nulls and'
    assert arguments(pipeline.feed(" voids</arg_value></tool_call>")) == ' voids"}'


def test_null_in_any_case_is_null():
    pipeline = make_pipeline(None, "spark25", tools=TOOLS)
    events = pipeline.feed(OPENING + "nULL</arg_value></tool_call>") + pipeline.finish()
    assert arguments(events) == '{"query": null}'
