"""Property (issue 43, section 1): for every tool-call format, string
arguments built from the format's own markers (every marker string in its
data, and every tag its rendered call writes), quotes, backslashes,
newlines and non-ASCII text, written as the format writes a call, come
back exactly, whole and at random splits, with no content.

What a value cannot hold is stated per format in `CANNOT_HOLD`, with the
reason; nothing else is left out. The test checks each entry too: the
marker indeed changes the parse when a value holds it, so the table cannot
excuse a marker the format reads as text."""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.workloads import distinct_tool_parsers
from parsers import ParseResult, make_pipeline, tool_format
from tests.parsers.test_properties import split_points
from tests.parsers.test_split_invariance import marker_strings

# A raw-text value runs to the first of its own close tag: no format
# escapes it there, and the peers (vLLM, SGLang, llama.cpp) end the value
# at the first one (docs/fidelity.md, "Markers inside arguments").
OWN_CLOSE = "the value's own close tag ends it (written unescaped; the peers end the value there)"
NEXT_OPEN = "a parameter's open tag opens the next value (its close left out), as SGLang and vLLM read it"
DELIMITER = "the string delimiter: the template writes a string between two, unescaped"
QWEN3_CODER_TAGS = {"</parameter>": OWN_CLOSE, "<parameter=": NEXT_OPEN}
ARG_VALUE = {"</arg_value>": OWN_CLOSE}
# format (its registered name) -> marker -> why a value cannot hold it.
CANNOT_HOLD: dict[str, dict[str, str]] = {
    "beam": {"</rfl:parameter>": OWN_CLOSE},
    "deepseekv32": {"</｜DSML｜parameter>": OWN_CLOSE},
    "deepseekv4": {"</｜DSML｜parameter>": OWN_CLOSE},
    "deepseekv41": {"</｜DSML｜ parameter>": OWN_CLOSE},
    "dots": {"</parameter>": OWN_CLOSE},
    "functiongemma": {"<escape>": DELIMITER},
    "gemma4": {'<|"|>': DELIMITER},
    "gigachat35": {"</｜GCML｜parameter>": OWN_CLOSE},
    "glm45": ARG_VALUE,
    "glm47": ARG_VALUE,
    "hunyuan": ARG_VALUE,
    "iquest_q1": ARG_VALUE,
    "k2_horizon": {"</ifm|arg_value>": OWN_CLOSE},
    "kimi_k3": {"<|close|>argument<|sep|>": OWN_CLOSE},
    "ling3": ARG_VALUE,
    "mimo": QWEN3_CODER_TAGS,
    "minicpm5": {"</param>": OWN_CLOSE},
    "minimax-m2": {"</parameter>": OWN_CLOSE},
    "minimax-m3": {
        "]<]minimax[>[": "the namespace token marks a tag wherever it stands, and a close tag closes"
        " the elements open inside it (`</invoke>` ends the call)"
    },
    "muse": {"</atem:parameter>": OWN_CLOSE},
    "nanbeige": QWEN3_CODER_TAGS,
    "poolside_v1": ARG_VALUE,
    "qwen3_coder": QWEN3_CODER_TAGS,
    "seed_oss": QWEN3_CODER_TAGS,
    "solar_open2": {
        "<|tool_arg:end|>": OWN_CLOSE,
        "<|tool_arg:start|>": NEXT_OPEN,
        "<|tool_call:start|>": "a call's start ends the call before it (its ends left out), as vLLM's tests read it",
    },
    "spark25": ARG_VALUE,
    "step3": {"</steptml:parameter>": OWN_CLOSE},
    "step3p5": QWEN3_CODER_TAGS,
}
# Where the marker alone is text, the text that shows why it is left out.
SHOWN_BY = {"]<]minimax[>[": "]<]minimax[>[</invoke>"}
# Inkling's control tokens end its payload wherever they stand (issue 43, left).
LEFT = {"inkling"}
PARSERS = [name for name in distinct_tool_parsers() if tool_format(name).call_template and name not in LEFT]
_TAG = re.compile(r"<[^<>\n]{1,40}>")
# Prose around the markers; `&` left out (MiMo and MiniCPM values are
# entity-decoded text), and each value begins and ends with a letter, as
# the tag formats trim a value's blank ends.
PROSE = ["a", " ", "\n", '"', "'", "\\", "é", "✓", "{", "}", "[", "]", "<", ">", "/", "|", "="]
TOOL_NAME = "write_file"


def _vocabulary(parser: str) -> list[str]:
    """The format's markers a value may hold: every marker string in its
    data and every tag its rendered call writes, less end-of-turn tokens
    (removed wherever they stand) and `CANNOT_HOLD`."""
    fmt = tool_format(parser)
    rendered = fmt.render_call(TOOL_NAME, '{"content": "x"}')
    framing = (fmt.call_start, *fmt.other_call_starts, fmt.call_end, fmt.section_start, fmt.section_end)
    markers = (
        marker_strings(fmt) | set(_TAG.findall(rendered)) | {marker for marker in framing if marker and marker.strip()}
    )
    excluded = set(fmt.end_of_turn) | set(CANNOT_HOLD.get(fmt.name, {}))
    return sorted(m for m in markers if not any(bad in m for bad in excluded))


def _tools(keys) -> list[dict]:
    properties = {key: {"type": "string"} for key in keys}
    return [
        {
            "type": "function",
            "function": {"name": TOOL_NAME, "parameters": {"type": "object", "properties": properties}},
        }
    ]


def _parse(parser: str, text: str, cuts: list[int], tools: list[dict]) -> ParseResult:
    pipeline, result = make_pipeline(None, parser, tools=tools), ParseResult()
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        result.add(pipeline.feed(text[start:end]))
    result.add(pipeline.finish())
    return result


def _comes_back(parser: str, arguments: dict[str, str], cuts: list[int] | None = None) -> bool:
    text = tool_format(parser).render_call(TOOL_NAME, orjson.dumps(arguments).decode())
    result = _parse(parser, text, cuts or [], _tools(arguments))
    got = [(name, orjson.loads(args)) for name, args in result.tool_calls]
    return got == [(TOOL_NAME, arguments)] and not result.content


@pytest.mark.parametrize("parser", PARSERS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_values_holding_the_formats_markers_come_back_exactly(parser, data):
    pieces = st.sampled_from(_vocabulary(parser)) | st.sampled_from(PROSE)
    value = st.lists(pieces, min_size=1, max_size=6).map(lambda parts: "a" + "".join(parts) + "z")
    keys = data.draw(st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=3, unique=True))
    arguments = {key: data.draw(value) for key in keys}
    text = tool_format(parser).render_call(TOOL_NAME, orjson.dumps(arguments).decode())
    whole = _parse(parser, text, [], _tools(keys))
    split = _parse(parser, text, data.draw(split_points(text)), _tools(keys))
    assert split.to_json() == whole.to_json()
    assert [(name, orjson.loads(args)) for name, args in whole.tool_calls] == [(TOOL_NAME, arguments)]
    assert not whole.content


@pytest.mark.parametrize(
    ("parser", "marker"), [(parser, marker) for parser, held in CANNOT_HOLD.items() for marker in held]
)
def test_what_a_value_cannot_hold_indeed_changes_the_parse(parser, marker):
    assert not _comes_back(parser, {"content": f"a {SHOWN_BY.get(marker, marker)} b", "mode": "w"})


def test_every_format_left_out_is_named_and_registered():
    assert {tool_format(name).name for name in PARSERS} >= set(CANNOT_HOLD)
