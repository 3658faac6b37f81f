"""Unit tests of the parser core: marker sets, the JSON scanner and the
stages' event streams (the guard against quadratic parsing is
test_linearity.py)."""

from __future__ import annotations

import orjson
import pytest

from parsers import CallArgs, CallEnd, CallStart, Content, Reasoning, make_pipeline, parse_text
from parsers.core.json_scan import JsonValueScanner
from parsers.core.json_string import JsonStringDecoder
from parsers.core.markers import marker_set


class TestMarkerSet:
    def test_finds_earliest_marker_and_prefers_longest_at_same_place(self):
        markers = marker_set("<tool_call>", "<tool_call>\n", "</think>")
        hit = markers.search("ab</think><tool_call>\n{")
        assert (hit.start, hit.marker) == (2, "</think>")
        hit = markers.search("x<tool_call>\n{")
        assert hit.marker == "<tool_call>\n"

    @pytest.mark.parametrize(
        "text, held",
        [
            ("hello", ""),
            ("hello <", "<"),
            ("hello <tool_ca", "<tool_ca"),
            ("a <b", ""),
            ("<tool_call", "<tool_call"),
            ("x</", "</"),
        ],
    )
    def test_holds_back_only_true_prefixes(self, text, held):
        markers = marker_set("<tool_call>", "</think>")
        assert text[markers.safe_end(text) :] == held

    def test_is_shared_per_marker_tuple(self):
        assert marker_set("<a>", "</a>") is marker_set("<a>", "</a>")


class TestJsonValueScanner:
    @pytest.mark.parametrize("value", ['{"a": "}\\"{", "b": [1, {"c": null}]}', '"str\\\\"', "[1, 2]", "{}"])
    def test_finds_the_end_at_any_split(self, value):
        text = value + " trailing"
        for size in (1, 2, 3, len(text)):
            scanner, consumed = JsonValueScanner(), 0
            for start in range(0, len(text), size):
                buf = text[start : start + size]
                if scanner.done:
                    break
                consumed += scanner.scan(buf, 0)
            assert scanner.done
            assert consumed == len(value)

    def test_bare_primitive_ends_at_delimiter_or_finish(self):
        scanner = JsonValueScanner()
        assert scanner.scan("12", 0) == 2 and not scanner.done
        scanner.finish()
        assert scanner.done
        scanner = JsonValueScanner()
        assert scanner.scan("true}", 0) == 4 and scanner.done


class TestEventStream:
    TEXT = '<think>plan</think>Sure. <tool_call>\n{"name": "f", "arguments": {"a": "xyz"}}\n</tool_call>'

    def events(self, size):
        pipeline = make_pipeline("qwen3", "qwen25")
        events = []
        for start in range(0, len(self.TEXT), size):
            events += pipeline.feed(self.TEXT[start : start + size])
        return events + pipeline.finish()

    @pytest.mark.parametrize("size", [1, 3, 1000])
    def test_name_first_then_verbatim_argument_fragments(self, size):
        events = self.events(size)
        starts = [e for e in events if isinstance(e, CallStart)]
        assert starts == [CallStart(0, "f")]
        first_args = next(i for i, e in enumerate(events) if isinstance(e, CallArgs))
        assert events.index(starts[0]) < first_args
        assert "".join(e.text for e in events if isinstance(e, CallArgs)) == '{"a": "xyz"}'
        assert events[-1] == CallEnd(0)
        assert "".join(e.text for e in events if isinstance(e, Reasoning)) == "plan"
        assert "".join(e.text for e in events if isinstance(e, Content)) == "Sure. "

    def test_arguments_stream_before_the_call_closes(self):
        pipeline = make_pipeline(None, "qwen25")
        events = pipeline.feed('<tool_call>\n{"name": "f", "arguments": {"content": "first part')
        assert events == [CallStart(0, "f"), CallArgs(0, '{"content": "first part')]

    @pytest.mark.parametrize(
        "parser, head",
        [
            ("pythonic", "Saving. [write_file(path='/tmp/a', content='first part"),
            ("lfm2", "<|tool_call_start|>[write_file(path='/tmp/a', content='first part"),
            ("gemma4", '<|tool_call>call:write_file{path:<|"|>/tmp/a<|"|>,content:<|"|>first part'),
        ],
    )
    def test_converted_arguments_stream_as_values_are_read(self, parser, head):
        pipeline = make_pipeline(None, parser)
        events = [e for e in pipeline.feed(head) if not isinstance(e, Content)]
        assert events[0] == CallStart(0, "write_file")
        assert "".join(e.text for e in events[1:]) == '{"path": "/tmp/a", "content": "first part'
        more = pipeline.feed(" and more")
        assert more == [CallArgs(0, " and more")]

    def test_two_calls_get_their_own_indices(self):
        result = parse_text(
            '<tool_call>{"name": "a"}</tool_call>\n<tool_call>{"name": "b"}</tool_call>', None, "hermes"
        )
        assert result.tool_calls == [("a", "{}"), ("b", "{}")]

    def test_feed_never_raises_on_garbage(self):
        pipeline = make_pipeline("qwen3", "qwen25")
        for piece in ["<tool_call>", "\x00{", '"\\', "}}]]", "</tool_call>", "<think>", "\ud7ff"]:
            pipeline.feed(piece)
        pipeline.finish()


class TestThinkingSwitches:
    @pytest.mark.parametrize(
        "parser, kwargs, thinking",
        [
            ("qwen3", {}, True),
            ("qwen3", {"enable_thinking": False}, False),
            ("deepseek-v3", {}, False),
            ("deepseek-v3", {"thinking": True}, True),
            ("kimi_k2", {"thinking": False}, False),
            ("deepseek-r1", {"enable_thinking": False}, True),
        ],
    )
    def test_request_kwargs_choose_the_starting_state(self, parser, kwargs, thinking):
        result = parse_text("words", parser, chat_template_kwargs=kwargs)
        assert (result.reasoning_content == "words") is thinking
        assert (result.content == "words") is not thinking


def test_arguments_text_is_exactly_what_the_model_wrote():
    arguments = '{"n": 1.0, "big": 12345678901234567890, "s": "caf\\u00e9"}'
    result = parse_text(
        '<tool_call>{"name": "f", "arguments": ' + arguments + "}</tool_call>", None, "hermes", chunk_size=3
    )
    assert result.tool_calls == [("f", arguments)]
    assert orjson.loads(arguments)["n"] == 1.0


class TestBufferCap:
    """`max_buffered_chars`: a call that is not recognised in time gives up
    its held-back text as content; nothing is lost."""

    NAME_LAST = '<tool_call>{"arguments": {"x": "' + "y" * 300 + '"}, "name": "f"}</tool_call> after'

    def test_an_unnamed_call_past_the_cap_becomes_content_as_it_streams(self):
        pipeline = make_pipeline(None, "qwen25", max_buffered_chars=100)
        fed, emitted = 0, 0
        for start in range(0, len(self.NAME_LAST), 7):
            piece = self.NAME_LAST[start : start + 7]
            events = pipeline.feed(piece)
            fed += len(piece)
            assert all(type(event) is Content for event in events)
            emitted += sum(len(event.text) for event in events)
            assert fed - emitted <= 100 + 7
        result = parse_text(self.NAME_LAST, None, "qwen25", chunk_size=7, max_buffered_chars=100)
        assert result.content == self.NAME_LAST and result.tool_calls == []

    def test_calls_within_the_cap_parse_as_usual(self):
        text = '<tool_call>{"name": "f", "arguments": {"x": "' + "y" * 300 + '"}}</tool_call>'
        result = parse_text(text, None, "qwen25", chunk_size=7, max_buffered_chars=100)
        assert result.tool_calls == [("f", '{"x": "' + "y" * 300 + '"}')]
        assert parse_text(self.NAME_LAST, None, "qwen25", chunk_size=7).tool_calls[0][0] == "f"

    def test_a_named_call_holding_a_long_typed_value_ends_and_the_rest_is_content(self):
        digits = "1" * 300
        text = f"<tool_call>\n<function=f>\n<parameter=n>\n{digits}\n</parameter>\n</function>\n</tool_call> after"
        tools = [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            }
        ]
        result = parse_text(text, None, "qwen3_coder", chunk_size=7, max_buffered_chars=100, tools=tools)
        [(name, arguments)] = result.tool_calls
        kept = arguments.removeprefix('{"n": ').removesuffix("}")
        assert name == "f" and kept == "1" * len(kept) and 90 <= len(kept) <= 110
        assert result.content == digits[len(kept) :] + "\n</parameter>\n</function>\n</tool_call> after"


class TestStringEncodedArguments:
    ENCODED = r"{\"path\": \"a\\\\b\", \"text\": \"x\\n\u00e9\ud83d\ude00 \\\"q\\\"\"}"
    TEXT = '<tool_call>{"name": "write", "arguments": "' + ENCODED + '"}</tool_call>'

    def test_the_decoder_gives_the_same_text_at_every_split(self):
        whole = orjson.loads(f'"{self.ENCODED}"')
        for cut in range(len(self.ENCODED) + 1):
            decoder = JsonStringDecoder()
            text = decoder.feed(self.ENCODED[:cut]) + decoder.feed(self.ENCODED[cut:]) + decoder.finish()
            assert text == whole, cut

    def test_arguments_encoded_as_a_string_stream_decoded_before_the_string_closes(self):
        pipeline = make_pipeline(None, "qwen25")
        head = '<tool_call>{"name": "write", "arguments": "{\\"path\\": \\"a'
        assert pipeline.feed(head) == [CallStart(0, "write"), CallArgs(0, '{"path": "a')]
        events = pipeline.feed(self.TEXT[len(head) :]) + pipeline.finish()
        rest = "".join(e.text for e in events if isinstance(e, CallArgs))
        assert '{"path": "a' + rest == orjson.loads(f'"{self.ENCODED}"')

    @pytest.mark.parametrize("size", [1, 2, 5, 1000])
    def test_every_split_gives_the_decoded_arguments(self, size):
        result = parse_text(self.TEXT, None, "qwen25", chunk_size=size)
        assert result.to_json()["tool_calls"] == [
            {"name": "write", "arguments": {"path": "a\\b", "text": 'x\n\u00e9\U0001f600 "q"'}}
        ]

    def test_a_string_cut_short_keeps_what_was_written(self):
        result = parse_text('<tool_call>{"name": "write", "arguments": "{\\"text\\": \\"par\\u00', None, "qwen25")
        assert result.tool_calls == [("write", '{"text": "par\\u00')]


@pytest.mark.parametrize(
    "parser, text",
    [
        ("qwen25", '<tool_call>\n{"name": "get_time", "arguments": null}\n</tool_call>'),
        ("hermes", '<tool_call>{"arguments": null, "name": "get_time"}</tool_call>'),
        ("apertus2509", '<|tools_prefix|>[{"get_time": null}]<|tools_suffix|>'),
    ],
)
@pytest.mark.parametrize("size", [1, 3, 1000])
def test_null_arguments_are_an_empty_object(parser, text, size):
    assert parse_text(text, None, parser, chunk_size=size).tool_calls == [("get_time", "{}")]


@pytest.mark.parametrize("parser", ["qwen3-thinking", "deepseek-r1"])
def test_a_start_marker_after_reasoning_text_is_reasoning_at_every_split(parser):
    text = "Hmm <think> is a tag.</think>Answer."
    for chunk_size in (None, 1, 5):
        result = parse_text(text, parser, None, chunk_size=chunk_size)
        assert (result.reasoning_content, result.content) == ("Hmm <think> is a tag.", "Answer.")


WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize(
    "reasoning, tool, text",
    [
        (None, "qwen25", '<tool_call>{"name":"f","arguments":"{\\"a\\":\n\\"b\\x\\"}"}</tool_call>'),
        ("kimi_k3", "kimi_k3", "δ<|open|>think<|sep|>ε"),
        ("kimi_k3", "kimi_k3", "δ<|open|>th"),
        (
            None,
            "beam",
            ' to=get_weather <|constrain|>xml<|message|><rfl:parameter name="city">\nParis\n</rfl:parameter><|call|>',
        ),
    ],
    ids=["string-arguments-with-raw-newline", "kimi_k3-start-after-text", "kimi_k3-cut-marker", "beam-header-space"],
)
def test_found_split_dependences_stay_fixed(reasoning, tool, text):
    whole = parse_text(text, reasoning, tool, tools=WEATHER).to_json()
    for size in (1, 2, 4, 7):
        assert parse_text(text, reasoning, tool, tools=WEATHER, chunk_size=size).to_json() == whole, size


def test_cohere_answer_markers_are_removed_after_a_call_too():
    text = (
        'Hmm<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "P"}}]'
        "<|END_ACTION|><|START_TEXT|>Done<|END_TEXT|>"
    )
    result = parse_text(text, "cohere_command4", "cohere_command4", tools=WEATHER)
    assert (result.reasoning_content, result.content) == ("Hmm", "Done")
    assert result.tool_calls == [("get_weather", '{"city": "P"}')]


def test_minimax_m3_follows_local_refs_in_the_schema():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "$defs": {"N": {"type": "integer"}},
                    "properties": {"n": {"$ref": "#/$defs/N"}, "s": {"type": "string"}},
                },
            },
        }
    ]
    ns = "]<]minimax[>["
    text = f'{ns}<tool_call>{ns}<invoke name="f">{ns}<n>2{ns}</n>{ns}<s>007{ns}</s>{ns}</invoke>{ns}</tool_call>'
    assert parse_text(text, None, "minimax-m3", tools=tools).tool_calls == [("f", '{"n": 2, "s": "007"}')]


@pytest.mark.parametrize("size", [None, 1, 3, 7])
def test_a_muse_message_ending_in_to_does_not_swallow_the_next_call(size):
    call = (
        "<|start|>assistant to=functions.get_weather<|message|><atem:function_calls>"
        '<atem:invoke name="get_weather"><atem:parameter name="city">P</atem:parameter></atem:invoke>'
        "</atem:function_calls><|eom|>"
    )
    result = parse_text(" to=user<|message|>Set x to=5<|eom|>" + call, "muse", "muse", tools=WEATHER, chunk_size=size)
    assert (result.content, result.tool_calls) == ("Set x to=5", [("get_weather", '{"city": "P"}')])


@pytest.mark.parametrize(
    "parser, text, content",
    [
        ("glm45", "<tool_call>get_weather\n<arg_key>ci", "<arg_key>ci"),
        ("minicpm5", '<function name="get_weather"><param name="ci', '<param name="ci'),
        ("minimax-m3", ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<ci', "<ci"),
        ("glm45", "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Par</arg_val", None),
    ],
)
@pytest.mark.parametrize("size", [None, 1])
def test_a_parameter_tag_the_output_cuts_off_is_content_a_cut_close_marker_is_not(parser, text, content, size):
    result = parse_text(text, None, parser, tools=WEATHER, chunk_size=size)
    assert result.content == content
    assert [name for name, _ in result.tool_calls] == ["get_weather"]
