"""A call's close markers written inside an open value are text of the value
(issue 43, section 1), for the tag formats beyond Qwen3-Coder's: DeepSeek's
DSML and GigaChat 3.5's GCML, MiniCPM, Muse's ATEM, Step-3's steptml, Kimi
K3's XTML, K2 Horizon's IFM tags, Beam's channel messages, dots.llm1 and
Solar Open 2. A coding agent writing a file about tool calls writes
`</｜DSML｜invoke>` or `<|close|>call<|sep|>` in a value; the value runs to
its own close tag, and the parameters and calls after it are read. Each
text parses the same whole, cut in two at every place and one character
at a time (`parsed_at_every_split`)."""

from __future__ import annotations

import orjson
import pytest

from parsers import tool_format
from tests.parsers.test_markers_in_values import calls, parsed_at_every_split

# parser, the reasoning parser it is served with, and the markers that close
# its call (and the block of calls around it), in the order written.
CLOSES = [
    ("deepseekv32", None, ("</｜DSML｜invoke>", "</｜DSML｜function_calls>")),
    ("deepseekv4", None, ("</｜DSML｜invoke>", "</｜DSML｜tool_calls>")),
    ("deepseekv41", None, ("</｜DSML｜ invoke>", "</｜DSML｜ calls>")),
    ("gigachat35", None, ("</｜GCML｜invoke>", "</｜GCML｜tool_calls>")),
    ("minicpm5", None, ("</function>",)),
    ("muse", "muse", ("</atem:invoke>", "</atem:function_calls>", "<|eom|>")),
    ("step3", None, ("</steptml:invoke>", "<｜tool_call_end｜>", "<｜tool_calls_end｜>")),
    ("kimi_k3", "kimi_k3", ("<|close|>call<|sep|>", "<|close|>tools<|sep|>")),
    ("k2_horizon", None, ("</ifm|tool_call>", "</ifm|tool_calls>")),
    ("beam", "beam", ("<|end|>", "<|call|>", "<|return|>")),
    ("dots", None, ("</invoke>", "</dots_function_call>")),
    ("solar_open2", None, ("<|tool_call:end|>",)),
]
IDS = [parser for parser, _, _ in CLOSES]


def _written(parser: str, *arguments: dict) -> str:
    fmt = tool_format(parser)
    return "".join(fmt.render_call("write_file", orjson.dumps(each).decode()) for each in arguments)


@pytest.mark.parametrize(("parser", "reasoning", "closes"), CLOSES, ids=IDS)
def test_each_close_marker_inside_a_value_is_text_of_the_value(parser, reasoning, closes):
    for marker in (*closes, "".join(closes), "\n".join(closes)):
        arguments = {"path": "a.txt", "content": f"A call ends with {marker} and then more.", "mode": "w"}
        result = parsed_at_every_split(_written(parser, arguments), parser, reasoning)
        assert calls(result) == [("write_file", arguments)], marker
        assert not result["content"], marker


@pytest.mark.parametrize(("parser", "reasoning", "closes"), CLOSES, ids=IDS)
def test_a_value_ending_in_a_close_marker_keeps_it(parser, reasoning, closes):
    """The marker right before the value's own close tag is still its text."""
    arguments = {"content": f"see {closes[0]}", "mode": "w"}
    result = parsed_at_every_split(_written(parser, arguments), parser, reasoning)
    assert calls(result) == [("write_file", arguments)]


@pytest.mark.parametrize(("parser", "reasoning", "closes"), CLOSES, ids=IDS)
def test_the_call_after_one_holding_its_close_markers_is_read(parser, reasoning, closes):
    first = {"path": "a.txt", "content": "".join(closes) + "\n" + closes[0]}
    second = {"path": "b.txt", "content": "plain"}
    if parser == "beam":  # Beam's messages: the second call is a message of its own
        text = _written(parser, first).removesuffix("<|call|>") + "<|end|><|start|>assistant" + _written(parser, second)
    else:
        text = _written(parser, first) + "\n" + _written(parser, second)
    result = parsed_at_every_split(text, parser, reasoning)
    assert calls(result) == [("write_file", first), ("write_file", second)]
    assert not result["content"]


# The value's own close tag left out: the call's close markers, last in the
# output, close it; a value the output cuts off keeps every character.
VALUE_CLOSES = {
    "deepseekv32": "</｜DSML｜parameter>",
    "deepseekv4": "</｜DSML｜parameter>",
    "deepseekv41": "</｜DSML｜ parameter>",
    "gigachat35": "</｜GCML｜parameter>",
    "minicpm5": "</param>",
    "muse": "</atem:parameter>",
    "step3": "</steptml:parameter>",
    "kimi_k3": "<|close|>argument<|sep|>",
    "k2_horizon": "</ifm|arg_value>",
    "beam": "\n</rfl:parameter>",
    "dots": "</parameter>",
    "solar_open2": "<|tool_arg:end|>",
}


@pytest.mark.parametrize(("parser", "reasoning", "closes"), CLOSES, ids=IDS)
def test_a_value_whose_close_is_left_out_ends_at_the_calls_close_last_in_the_output(parser, reasoning, closes):
    written = _written(parser, {"content": "VALUE"})
    before, after = written.split("VALUE")
    text = before + "a.txt" + after.removeprefix(VALUE_CLOSES[parser]).lstrip("\n")
    result = parsed_at_every_split(text, parser, reasoning)
    assert calls(result) == [("write_file", {"content": "a.txt"})]
    assert not result["content"]


@pytest.mark.parametrize(("parser", "reasoning", "closes"), CLOSES, ids=IDS)
def test_a_value_cut_off_keeps_the_close_markers_written_in_it(parser, reasoning, closes):
    before = _written(parser, {"content": "VALUE"}).split("VALUE")[0]
    value = f"x {closes[0]} y"
    result = parsed_at_every_split(before + value, parser, reasoning)
    assert calls(result) == [("write_file", {"content": value})]


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "write_file", "arguments": {"content": "x </ifm|tool_call> y </ifm|tool_calls>"}}',
        '[{"name": "write_file", "arguments": {"content": "a \\"</ifm|tool_call>\\" b"}}]',
    ],
)
def test_the_ifm_block_close_inside_a_json_string_is_text(body):
    """K2 Horizon's JSON block: its closer ends it only outside a string."""
    second = '<ifm|tool_call>{"name": "write_file", "arguments": {"content": "z"}}</ifm|tool_call>'
    text = f"<ifm|tool_calls>\n<ifm|tool_call>{body}</ifm|tool_call>\n{second}\n</ifm|tool_calls>"
    result = parsed_at_every_split(text, "k2_horizon")
    written = orjson.loads(body)
    first = (written[0] if isinstance(written, list) else written)["arguments"]
    assert calls(result) == [("write_file", first), ("write_file", {"content": "z"})]
    assert not result["content"]


# Harmony (gpt-oss): its framing reads messages before any call, so a
# terminator, a filler or a header inside a string of a call's JSON
# arguments must stay text there, blanks between them included.
@pytest.mark.parametrize(
    "value",
    [
        "a <|call|> <|call|> b",
        "<|call|>commentary",
        "x<|end|>\n<|start|>assistant<|channel|>final<|message|>y",
        "<|channel|>analysis<|message|>thinking",
    ],
)
def test_harmony_framing_inside_a_json_string_is_text(value):
    arguments = {"path": "a.txt", "content": value}
    text = (
        "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.write_file"
        " <|constrain|>json<|message|>" + orjson.dumps(arguments).decode() + "<|call|>"
    )
    result = parsed_at_every_split(text, "gpt-oss", "gpt-oss")
    assert calls(result) == [("write_file", arguments)]
    assert result["reasoning_content"] == "Need it."
    assert not result["content"]
