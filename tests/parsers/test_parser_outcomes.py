"""The tool-call stage counts what it made of the text (calls, fallbacks to
content, invalid arguments), the same at every chunk split."""

from __future__ import annotations

import pytest

from parsers import CallOutcomes, make_pipeline

TWO_CALLS = (
    '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
    '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>'
)
MALFORMED = "Before <tool_call>not json</tool_call> after"
CUT_ARGUMENTS = '<tool_call>\n{"name": "a", "arguments": {"x": 1, "y": [2'


def outcomes(text: str, tool_parser: str = "qwen25", chunk: int | None = None) -> CallOutcomes:
    pipeline = make_pipeline(None, tool_parser)
    step = chunk or len(text)
    for start in range(0, len(text), step):
        pipeline.feed(text[start : start + step])
    pipeline.finish()
    return pipeline.outcomes


@pytest.mark.parametrize("chunk", [None, 1, 3])
@pytest.mark.parametrize(
    "text, expected",
    [
        (TWO_CALLS, CallOutcomes(calls=2)),
        (MALFORMED, CallOutcomes(fallbacks=1)),
        (MALFORMED + TWO_CALLS, CallOutcomes(calls=2, fallbacks=1)),
        (CUT_ARGUMENTS, CallOutcomes(calls=1, invalid_arguments=1)),
        ("plain text, no call", CallOutcomes()),
    ],
)
def test_counts_calls_fallbacks_and_invalid_arguments(text, expected, chunk):
    assert outcomes(text, chunk=chunk) == expected


def test_text_that_only_might_start_a_call_is_no_fallback():
    """Pythonic calls start at any bare `[`: a markdown link is text, not a
    malformed call."""
    assert outcomes("See [the docs](https://x.example) or [1, 2].", "pythonic") == CallOutcomes()
    assert outcomes('[get_weather(city="Paris")]', "pythonic") == CallOutcomes(calls=1)


def test_converted_arguments_cut_short_are_still_valid_json():
    """Formats converted to JSON close what they have: the client gets valid JSON."""
    cut = "<tool_call>\n<function=f>\n<parameter=city>\nPar"
    assert outcomes(cut, "qwen3_coder") == CallOutcomes(calls=1)


def test_without_a_tool_stage_there_are_no_outcomes():
    assert make_pipeline("qwen3", None).outcomes is None
