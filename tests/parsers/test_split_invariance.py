"""Every registered format, alone and with its family's other parser: a
random mix of the format's own markers, prose, whitespace and whole or
cut-short calls parses the same one-shot, one character at a time and in
random pieces, and never raises.

The vocabulary is read from the format tables themselves (every marker
string a `ReasoningFormat`, `ToolFormat` or body grammar names), so a new
format is covered the day it is registered."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.ops.model_families import FAMILIES
from parsers import (
    ParseResult,
    make_pipeline,
    reasoning_format,
    reasoning_parser_names,
    tool_call_parser_names,
    tool_format,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]
GREEK = "αβγδεζηθικλμνξοπρστυφχψω"
MARKUP = set("<>|[]{}｜◁▷")
NOT_MARKERS = {
    "models",
    "call_template",
    "template",
    "name_pattern",
    "key_pattern",
    "header_prefix",
    "gap_pattern",
}
EXAMPLES = 40  # per pair of parsers
PUNCTUATION = ["<", ">", "/", "{", "}", "[", "]", '"', "=", ",", ":"]


def marker_strings(obj, depth: int = 0) -> set[str]:
    """The short strings with markup characters anywhere in a format's data."""
    if depth > 6:
        return set()
    if isinstance(obj, str):
        return {obj} if len(obj) < 60 and MARKUP & set(obj) else set()
    if isinstance(obj, (tuple, list, set, frozenset)):
        return set().union(*(marker_strings(item, depth + 1) for item in obj))
    if isinstance(obj, dict):
        return set().union(
            *(marker_strings(key, depth + 1) | marker_strings(value, depth + 1) for key, value in obj.items())
        )
    if isinstance(obj, functools.partial):
        return marker_strings(obj.args, depth + 1) | marker_strings(obj.keywords, depth + 1)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = (field.name for field in dataclasses.fields(obj) if field.name not in NOT_MARKERS)
        return set().union(*(marker_strings(getattr(obj, name), depth + 1) for name in fields))
    return set()


def _pairs() -> list[tuple[str | None, str | None]]:
    tools, reasoning = set(tool_call_parser_names()), set(reasoning_parser_names())
    pairs = (
        {(None, name) for name in tools}
        | {(name, None) for name in reasoning}
        | {(name, name) for name in tools & reasoning}
    )
    pairs |= {(family.reasoning_parser, family.tool_call_parser) for family in FAMILIES}
    return sorted(pairs, key=lambda pair: (pair[0] or "", pair[1] or ""))


def vocabulary(reasoning: str | None, tool: str | None) -> tuple[list[str], list[str]]:
    """(markers, whole calls) of a pair of parsers."""
    markers = set()
    if reasoning:
        markers |= marker_strings(reasoning_format(reasoning))
    calls = []
    if tool:
        fmt = tool_format(tool)
        markers |= marker_strings(fmt)
        calls.append(fmt.render_call("get_weather", '{"city": "@city@", "days": 2}'))
    return sorted(markers) + PUNCTUATION, calls


@st.composite
def outputs(draw, markers: list[str], calls: list[str]) -> str:
    words = st.text(alphabet=GREEK, min_size=1, max_size=4)
    part = st.one_of(words, st.sampled_from(markers), st.sampled_from([" ", "\n", "\n\n"]))
    if calls:
        whole = st.tuples(st.sampled_from(calls), words).map(
            lambda call_city: call_city[0].replace("@city@", call_city[1])
        )
        cut = whole.flatmap(lambda call: st.integers(0, len(call)).map(lambda end: call[:end]))
        part = st.one_of(part, whole, cut)
    return "".join(draw(st.lists(part, min_size=3, max_size=24)))


def parse(reasoning: str | None, tool: str | None, pieces: list[str]) -> tuple:
    pipeline = make_pipeline(reasoning, tool, tools=TOOLS)
    result = ParseResult()
    for piece in pieces:
        result.add(pipeline.feed(piece))
    result.add(pipeline.finish())
    return result.reasoning_content, result.content, result.tool_calls


@pytest.mark.parametrize(("reasoning", "tool"), _pairs(), ids=lambda name: name or "-")
def test_every_split_parses_like_one_shot(reasoning, tool):
    markers, calls = vocabulary(reasoning, tool)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        text = data.draw(outputs(markers, calls))
        cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8))))
        one_shot = parse(reasoning, tool, [text])
        for size in (1, 2, 3, 5):
            assert parse(reasoning, tool, [text[i : i + size] for i in range(0, len(text), size)]) == one_shot, size
        assert (
            parse(reasoning, tool, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]) == one_shot
        )

    check()
