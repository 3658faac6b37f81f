"""The JSON-array-of-calls stage (replies constrained by the call-array
schema): the same result at every split, nothing lost when the reply is
not an array."""

from __future__ import annotations

import pytest

from parsers.grammars.call_array import CallArrayParser
from parsers.pipeline import ParseResult, parse_text

CASES = [
    ('[{"name": "get_weather", "parameters": {"city": "Paris"}}]\n', None, [("get_weather", {"city": "Paris"})]),
    (
        ' [{"name": "a", "parameters": {}}, {"name": "b", "arguments": {"x": [1, "]"]}}]',
        None,
        [("a", {}), ("b", {"x": [1, "]"]})],
    ),
    ('{"name": "a", "parameters": {"q": 1}}', None, [("a", {"q": 1})]),
    ("Sorry, I cannot.", "Sorry, I cannot.", []),
    ("[1, 2]", "[1, 2]", []),
    ('[{"name": "a", "parameters": {"q": "cut', None, [("a", '{"q": "cut')]),
    ('[{"name": "a", "parameters": {}}] and text', " and text", [("a", {})]),
    ("", None, []),
]


def parse(text: str, step: int) -> dict:
    parser, result = CallArrayParser(), ParseResult()
    for start in range(0, len(text), step):
        result.add(parser.feed(text[start : start + step]))
    result.add(parser.finish())
    return result.to_json()


@pytest.mark.parametrize(("text", "content", "calls"), CASES)
def test_every_split_gives_the_one_shot_result(text, content, calls):
    one_shot = parse(text, max(len(text), 1))
    assert one_shot["content"] == content
    assert [(call["name"], call["arguments"]) for call in one_shot["tool_calls"]] == calls
    for step in range(1, len(text)):
        assert parse(text, step) == one_shot


def test_an_array_unnamed_past_the_buffer_cap_streams_as_content():
    """The arguments come first and run long: past `max_buffered_chars`
    the text goes out as content as it comes, none of it lost."""
    text = '[{"arguments": {"q": "' + "x" * 5000 + '"}, "name": "search"}] done'
    parser, result = CallArrayParser(max_buffered_chars=1000), ParseResult()
    for start in range(0, len(text), 64):
        result.add(parser.feed(text[start : start + 64]))
        assert start + 64 - len(result.content or "") <= 1000 + 64, "held back past the cap"
    result.add(parser.finish())
    assert result.to_json() == {"reasoning_content": None, "content": text, "tool_calls": []}
    assert parse_text(text, call_array=True, max_buffered_chars=1000, chunk_size=64).to_json() == result.to_json()


def test_a_call_named_within_the_buffer_cap_is_a_call():
    text = '[{"arguments": {"q": "' + "x" * 500 + '"}, "name": "search"}]'
    parser, result = CallArrayParser(max_buffered_chars=1000), ParseResult()
    for start in range(0, len(text), 64):
        result.add(parser.feed(text[start : start + 64]))
    result.add(parser.finish())
    assert result.to_json() == {
        "reasoning_content": None,
        "content": None,
        "tool_calls": [{"name": "search", "arguments": {"q": "x" * 500}}],
    }
