"""A format's own markers written inside an argument, and dotted tool names
(issue 43, "what the round trip loses"): a coding agent writing a file about
tool calls writes `</tool_call>` or `<｜tool▁call▁end｜>` in a value, and a
tool may be named `db.search-records`. Each text parses the same whole, cut
in two at every place, and one character at a time."""

from __future__ import annotations

import orjson
import pytest

from parsers import ParseResult, make_pipeline, tool_call_parser_names, tool_format
from tests.parsers.test_split_invariance import marker_strings

WRITE_FILE = {
    "type": "function",
    "function": {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "string"}},
        },
    },
}
SEARCH_RECORDS = {
    "type": "function",
    "function": {
        "name": "db.search-records",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def parse(text: str, pieces: list[str], tool: str, reasoning: str | None, tools: list[dict]) -> dict:
    pipeline, result = make_pipeline(reasoning, tool, tools=tools), ParseResult()
    for piece in pieces:
        result.add(pipeline.feed(piece))
    result.add(pipeline.finish())
    return {**result.to_json(), "raw": [arguments for _, arguments in result.tool_calls]}


def parsed_at_every_split(text: str, tool: str, reasoning: str | None = None, tools: list[dict] | None = None) -> dict:
    """The one-shot result, checked equal to every cut in two and to one
    character at a time."""
    tools = tools or [WRITE_FILE]
    whole = parse(text, [text], tool, reasoning, tools)
    for cut in range(1, len(text)):
        assert parse(text, [text[:cut], text[cut:]], tool, reasoning, tools) == whole, f"cut at {cut}"
    assert parse(text, list(text), tool, reasoning, tools) == whole, "one character at a time"
    return whole


def calls(result: dict) -> list[tuple[str, dict]]:
    return [(call["name"], call["arguments"]) for call in result["tool_calls"]]


# 1. Qwen3-Coder's tags: a value runs to its own `</parameter>`.
QWEN3_CODER_TAGS = ["qwen3_coder", "step3p5", "nanbeige", "mimo", "seed_oss"]


@pytest.mark.parametrize("parser", QWEN3_CODER_TAGS)
@pytest.mark.parametrize("marker", ["</tool_call>", "</function>", "</function>\n</tool_call>", "</seed:tool_call>"])
def test_a_call_close_inside_a_value_is_text_of_the_value(parser, marker):
    arguments = {"path": "notes.txt", "content": f"A call ends with {marker} and then more.", "mode": "w"}
    text = "Saving.\n\n" + tool_format(parser).render_call("write_file", orjson.dumps(arguments).decode())
    result = parsed_at_every_split(text, parser)
    assert calls(result) == [("write_file", arguments)]
    assert result["content"] == "Saving.\n\n"


@pytest.mark.parametrize(
    "text, arguments",
    [
        # Cut off by the end of the output: every character is the value's.
        (
            "<tool_call>\n<function=write_file>\n<parameter=content>\nEnd with </tool_call>\nthen <b>",
            {"content": "End with </tool_call>\nthen <b>"},
        ),
        ("<tool_call>\n<function=write_file>\n<parameter=content>\nx </function> y", {"content": "x </function> y"}),
        # The value's `</parameter>` left out: the call's close, last in the output, closes it.
        (
            "<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</function>\n</tool_call>\n",
            {"path": "a.txt"},
        ),
        ("<tool_call>\n<function=write_file>\n<parameter=path>\na.txt</tool_call>", {"path": "a.txt"}),
        ("<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</function>\n</tool", {"path": "a.txt"}),
        # ... and a `<parameter=` opens the next value, as SGLang and vLLM read it.
        (
            "<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n<parameter=mode>\nw\n</parameter>\n"
            "</function>\n</tool_call>",
            {"path": "a.txt", "mode": "w"},
        ),
    ],
)
def test_a_value_never_closed_keeps_every_character(text, arguments):
    result = parsed_at_every_split(text, "qwen3_coder")
    assert calls(result) == [("write_file", arguments)]
    assert result["content"] is None


def test_a_second_call_after_a_value_holding_a_call_close_is_read():
    first = {"path": "a.txt", "content": "<tool_call>\n<function=f>\n</function>\n</tool_call>"}
    second = {"path": "b.txt", "content": "plain"}
    fmt = tool_format("qwen3_coder")
    text = fmt.render_call("write_file", orjson.dumps(first).decode()) + "\n"
    text += fmt.render_call("write_file", orjson.dumps(second).decode())
    assert calls(parsed_at_every_split(text, "qwen3_coder")) == [("write_file", first), ("write_file", second)]


# 2. JSON arguments: the format's end marker counts only outside a JSON string.
@pytest.mark.parametrize(
    "parser, end_marker",
    [
        ("functionary_v3_1", "</function>"),
        ("deepseekv3", "<｜tool▁call▁end｜>"),
        ("deepseekv31", "<｜tool▁call▁end｜>"),
        ("kimi_k2", "<|tool_call_end|>"),
    ],
)
@pytest.mark.parametrize("before", ["a ", 'a \\" ', "a \\\\"])
def test_the_end_marker_inside_a_json_string_is_text(parser, end_marker, before):
    written = '{"path": "a.txt", "content": "' + before + end_marker + ' b", "mode": "w"}'
    text = tool_format(parser).render_call("write_file", written)
    result = parsed_at_every_split(text, parser)
    assert result["raw"] == [written]
    assert result["content"] is None


@pytest.mark.parametrize("parser", ["functionary_v3_1", "deepseekv31", "kimi_k2"])
def test_calls_after_one_holding_the_end_marker_are_read(parser):
    fmt = tool_format(parser)
    first = {"path": "a.txt", "content": f"x {fmt.call_end.strip()} y"}
    second = {"path": "b.txt", "content": "z"}
    text = fmt.render_call("write_file", orjson.dumps(first).decode())
    text += fmt.render_call("write_file", orjson.dumps(second).decode())
    assert calls(parsed_at_every_split(text, parser)) == [("write_file", first), ("write_file", second)]


@pytest.mark.parametrize("parser", ["deepseekv32", "deepseek_v4"])
def test_a_dsml_json_body_holding_the_invoke_close_and_a_parameter_tag_is_read_whole(parser):
    written = '{"content": "a </｜DSML｜invoke> <｜DSML｜parameter name=\\"x\\"> b"}'
    text = '<｜DSML｜invoke name="write_file">\n' + written + "\n</｜DSML｜invoke>"
    result = parsed_at_every_split(text, parser)
    assert result["raw"] == [written]
    assert result["content"] is None


def test_arguments_cut_before_their_end_marker_still_end_there():
    """Outside a string the marker ends the arguments, malformed or not."""
    text = '<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{"path": 1<|tool_call_end|><|tool_calls_section_end|>Done.'
    result = parsed_at_every_split(text, "kimi_k2")
    assert result["raw"] == ['{"path": 1']
    assert result["content"] == "Done."


def _json_bodied_formats() -> list[str]:
    return [
        name
        for name in tool_call_parser_names()
        if tool_format(name).render_arguments is None
        and tool_format(name).call_template
        # Inkling's JSON payload ends at its control tokens wherever they stand (left, issue 43).
        and name != "inkling"
    ]


@pytest.mark.parametrize("parser", _json_bodied_formats())
def test_every_marker_of_a_json_format_inside_a_string_argument_is_text(parser):
    """Each marker string in the format's data, end-of-turn tokens aside
    (they end the turn wherever they stand), written inside a string
    argument comes back in it, one-shot and one character at a time."""
    fmt = tool_format(parser)
    markers = sorted(m for m in marker_strings(fmt) if m not in fmt.end_of_turn and not {'"', "\\"} & set(m))
    for marker in markers:
        arguments = {"content": f"a {marker} b", "n": 1}
        text = fmt.render_call("write_file", orjson.dumps(arguments).decode())
        for pieces in ([text], list(text)):
            result = parse(text, pieces, parser, None, [WRITE_FILE])
            assert calls(result) == [("write_file", arguments)], f"{marker!r} in {pieces[:1]!r}"
            assert not result["content"], marker


# 3. Python-literal calls: a string runs to its own quote; the block's end
# marker inside it is text (OLMo 3's `</function_calls>`, Llama 4's
# `<|python_end|>`, LFM2's `<|tool_call_end|>`).
PYTHONIC_BLOCKS = [
    ("olmo3", "<function_calls>\nwrite_file(path='a.txt', content='{value}')\n</function_calls>"),
    ("pythonic", '<|python_start|>[write_file(path="a.txt", content="{value}")]<|python_end|>'),
    ("lfm2", '<|tool_call_start|>[write_file(path="a.txt", content="{value}")]<|tool_call_end|>'),
]


@pytest.mark.parametrize(("parser", "block"), PYTHONIC_BLOCKS)
def test_the_end_marker_inside_a_python_string_is_text(parser, block):
    end_marker = tool_format(parser).call_end
    value = f"a {end_marker} b, then {end_marker}"
    result = parsed_at_every_split("Saving. " + block.format(value=value) + " Done.", parser)
    assert calls(result) == [("write_file", {"path": "a.txt", "content": value})]
    assert result["content"] == "Saving.  Done."


@pytest.mark.parametrize(("parser", "block"), PYTHONIC_BLOCKS)
def test_the_end_marker_after_a_string_never_closed_still_ends_the_block(parser, block):
    end_marker = tool_format(parser).call_end
    text = "Saving. " + block.format(value="never closed").split("never closed")[0] + f"never closed{end_marker} Done."
    result = parsed_at_every_split(text, parser)
    assert calls(result) == [("write_file", {"path": "a.txt", "content": "never closed"})]
    assert result["content"] == "Saving.  Done."


# 4. Dotted tool names: only the format's own `functions.` namespace goes.
@pytest.mark.parametrize(
    "tool, reasoning, text, name",
    [
        (
            "gpt-oss",
            "gpt-oss",
            '<|channel|>commentary to=functions.db.search-records <|constrain|>json<|message|>{"q": "x"}<|call|>',
            "db.search-records",
        ),
        (
            "gpt-oss",
            "gpt-oss",
            '<|start|>assistant to=functions.db.search-records<|channel|>commentary json<|message|>{"q": "x"}<|call|>',
            "db.search-records",
        ),
        # Another namespace than `functions.`: its last dot-segment, as SGLang reads it.
        (
            "gpt-oss",
            "gpt-oss",
            '<|channel|>commentary to=api.users.create <|constrain|>json<|message|>{"q": "x"}<|call|>',
            "create",
        ),
        (
            "muse",
            "muse",
            ' to=functions.db.search-records<|message|><atem:function_calls>\n<atem:invoke name="db.search-records">\n'
            '<atem:parameter name="q">x</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>',
            "db.search-records",
        ),
        (
            "muse",
            "muse",
            ' to=functions.db.search-records<|message|><atem:function_calls>\n<atem:invoke name="functions.db.search-records">\n'
            '<atem:parameter name="q">x</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>',
            "db.search-records",
        ),
        (
            "beam",
            "beam",
            "<|channel|>analysis<|message|>Need.<|end|><|start|>assistant to=db.search-records<|channel|>analysis "
            '<|constrain|>xml<|message|><rfl:parameter name="q">\nx\n</rfl:parameter><|call|>',
            "db.search-records",
        ),
        (
            "kimi_k2",
            None,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.db.search-records:0<|tool_call_argument_begin|>"
            '{"q": "x"}<|tool_call_end|><|tool_calls_section_end|>',
            "db.search-records",
        ),
    ],
)
def test_a_dotted_tool_name_comes_back_whole(tool, reasoning, text, name):
    result = parsed_at_every_split(text, tool, reasoning, tools=[SEARCH_RECORDS])
    assert calls(result) == [(name, {"q": "x"})]
