"""K2 Horizon (IFM tokens): reasoning closed by any effort's closer, and
tool calls read a block (or a whole group) at a time, through the parsers
and through the real gateway."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import CallArgs, CallStart, make_pipeline, parse_text
from tests.sdk_clients import openai_client

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "$defs": {"Days": {"type": "integer"}},
            "properties": {
                "city": {"type": "string"},
                "days": {"$ref": "#/$defs/Days"},
                "code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
        },
    },
}
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
TOOLS = [WEATHER, SEARCH]
PARIS = "<ifm|tool_call>get_weather\n<ifm|arg_key>city</ifm|arg_key>\n<ifm|arg_value>Paris</ifm|arg_value>\n</ifm|tool_call>"
SEARCH_X = '<ifm|tool_call>{"name": "search", "arguments": {"query": "x"}}</ifm|tool_call>'
THINKING = [
    ("<ifm|think>", "</ifm|think>"),
    ("<ifm|think_fast>", "</ifm|think_fast>"),
    ("<ifm|think_faster>", "</ifm|think_faster>"),
]


def parsed(text: str, reasoning: str | None = None, **options) -> dict:
    """The parse of `text`, the same whole and one character at a time."""
    whole = parse_text(text, reasoning, "k2_horizon", tools=TOOLS, **options)
    by_char = parse_text(text, reasoning, "k2_horizon", tools=TOOLS, chunk_size=1, **options)
    assert by_char.to_json() == whole.to_json()
    return whole.to_json()


@pytest.mark.parametrize("opener, closer", THINKING)
@pytest.mark.parametrize("effort", ["low", "medium", "high", None])
def test_any_efforts_closer_ends_reasoning_whatever_the_request_asked(opener, closer, effort):
    kwargs = {"reasoning_effort": effort} if effort else {}
    for text in (f"{opener}Plan.{closer}Answer.", f"Plan.{closer}Answer."):
        result = parsed(text, "k2_horizon", chat_template_kwargs=kwargs)
        assert (result["reasoning_content"], result["content"]) == ("Plan.", "Answer.")


def test_reasoning_then_a_group_of_tag_and_json_calls():
    text = f"Two lookups.</ifm|think_fast>\n<ifm|tool_calls>\n{PARIS}\n{SEARCH_X}\n</ifm|tool_calls><|ifm|im_end|>"
    assert parsed(text, "k2_horizon") == {
        "reasoning_content": "Two lookups.",
        "content": None,
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "search", "arguments": {"query": "x"}},
        ],
    }


def test_a_group_whose_blocks_name_no_call_is_content_as_written():
    bad = "<ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key></ifm|tool_call>"
    text = f"Here.<ifm|tool_calls>\n{bad}\n{bad}\n</ifm|tool_calls> Done."
    assert parsed(text) == {"reasoning_content": None, "content": text, "tool_calls": []}


def test_a_block_that_names_no_call_is_content_and_the_calls_around_it_count():
    bad = "<ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key></ifm|tool_call>"
    text = f"Here.<ifm|tool_calls>\n{bad}\n{PARIS}\n{bad}\n{SEARCH_X}\n</ifm|tool_calls> Done."
    assert parsed(text) == {
        "reasoning_content": None,
        "content": f"Here.\n{bad}\n{bad} Done.",
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "search", "arguments": {"query": "x"}},
        ],
    }


def test_a_named_call_stays_and_the_rest_of_its_malformed_block_is_content():
    text = PARIS.replace("</ifm|tool_call>", "<ifm|arg_key>days</ifm|arg_key> oops 2</ifm|tool_call>") + " Done."
    assert parsed(text) == {
        "reasoning_content": None,
        "content": "\n<ifm|arg_key>days</ifm|arg_key> oops 2 Done.",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    }


def test_a_call_the_output_cuts_off_keeps_what_it_streamed():
    assert parsed(PARIS.split("</ifm|arg_value>")[0] + " and Lyon")["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris and Lyon"}}
    ]
    assert parsed('<ifm|tool_call>{"name": "search", "arguments": {"query": "x')["tool_calls"] == [
        {"name": "search", "arguments": '{"query": "x'}
    ]


@pytest.mark.parametrize(
    "head, streamed",
    [  # the second call's value is a string by its wire type (the request gives no schema)
        (
            "<ifm|tool_calls>\n<ifm|tool_call>write_file\n<ifm|arg_key>content</ifm|arg_key>\n<ifm|arg_value>first part",
            '{"content": "first part',
        ),
        (
            "<ifm|tool_call>write_file<ifm|arg_key>content</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>first part",
            '{"content": "first part',
        ),
        ('<ifm|tool_call>{"name": "write_file", "arguments": {"content": "first part', '{"content": "first part'),
        (
            '<ifm|tool_call>{"function": {"name": "write_file", "arguments": {"content": "first part',
            '{"content": "first part',
        ),
    ],
)
def test_arguments_stream_before_the_block_closes(head, streamed):
    write_file = {
        "type": "function",
        "function": {"name": "write_file", "parameters": {"properties": {"content": {"type": "string"}}}},
    }
    pipeline = make_pipeline(None, "k2_horizon", tools=[] if "arg_type" in head else [write_file])
    events = pipeline.feed(head)
    assert events[0] == CallStart(0, "write_file")
    assert "".join(e.text for e in events[1:] if type(e) is CallArgs) == streamed
    long_part = " and more" * 8000
    assert pipeline.feed(long_part) == [CallArgs(0, long_part)]


def test_a_group_cut_off_keeps_its_complete_calls():
    text = f"<ifm|tool_calls>\n{PARIS}\n<ifm|tool_call>search<ifm|arg_key>que"
    assert parsed(text) == {
        "reasoning_content": None,
        "content": "\n<ifm|tool_call>search<ifm|arg_key>que",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    }


def test_thinking_left_in_the_text_is_content_wherever_it_is():
    thought = f"<ifm|think>Maybe {PARIS}?</ifm|think>"
    text = f"First.{thought}\n{SEARCH_X}"
    assert parsed(text) == {
        "reasoning_content": None,
        "content": f"First.{thought}\n",
        "tool_calls": [{"name": "search", "arguments": {"query": "x"}}],
    }


def test_tag_values_typed_by_schema_then_wire_type_then_as_json():
    call = (
        "<ifm|tool_call>get_weather"
        "<ifm|arg_key>days</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>3</ifm|arg_value>"
        "<ifm|arg_key>code</ifm|arg_key><ifm|arg_type>string</ifm|arg_type><ifm|arg_value>007</ifm|arg_value>"
        '<ifm|arg_key>units</ifm|arg_key><ifm|arg_value>["C", 1]</ifm|arg_value>'
        "<ifm|arg_key>note</ifm|arg_key><ifm|arg_value> warm </ifm|arg_value>"
        "</ifm|tool_call>"
    )
    assert parsed(call)["tool_calls"] == [
        {"name": "get_weather", "arguments": {"days": 3, "code": "007", "units": ["C", 1], "note": " warm "}}
    ]


def test_json_bodies_in_every_shape_the_format_allows():
    blocks = (
        '<ifm|tool_call>{"function": {"name": "search", "arguments": "{\\"query\\": \\"a\\"}"}}</ifm|tool_call>'
        '<ifm|tool_call>[{"name": "search", "parameters": {"query": "b"}}, {"name": "get_weather"}]</ifm|tool_call>'
    )
    assert parsed(blocks)["tool_calls"] == [
        {"name": "search", "arguments": {"query": "a"}},
        {"name": "search", "arguments": {"query": "b"}},
        {"name": "get_weather", "arguments": {}},
    ]


def test_local_schema_refs_type_values_in_the_other_tag_formats_too():
    call = "<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
    result = parse_text(call, None, "glm45", tools=TOOLS)
    assert result.tool_calls == [("get_weather", '{"days": 3}')]


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway whose model's parsers are picked from its backend name."""
    _, backend_url = fake_backend_server
    model = {"name": "k2", "backend": {"url": f"{backend_url}/v1", "model": "IFM/K2-Horizon-7B"}}
    gateway = serve(create_app(Config.model_validate({"models": [model]})))
    return openai_client(gateway)


@pytest.mark.parametrize("chunk_size", [1, 7])
def test_gateway_streams_reasoning_and_calls_as_it_answers_whole(client, fake, chunk_size):
    paris_for_two_days = PARIS.replace(
        "</ifm|tool_call>", "<ifm|arg_key>days</ifm|arg_key><ifm|arg_value>2</ifm|arg_value></ifm|tool_call>"
    )
    output = f"Need both.</ifm|think>\n<ifm|tool_calls>\n{paris_for_two_days}\n{SEARCH_X}\n</ifm|tool_calls>"
    fake.script(output, chunk_size=chunk_size)
    messages = [{"role": "user", "content": "Weather, and search x."}]
    request = {"model": "k2", "messages": messages, "tools": TOOLS, "reasoning_effort": "low"}
    reasoning, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            assert not choice.delta.content
            for call in choice.delta.tool_calls or ():
                calls.setdefault(call.index, [call.function.name, ""])[1] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    expected = [["get_weather", '{"city": "Paris", "days": 2}'], ["search", '{"query": "x"}']]
    assert (reasoning, [calls[i] for i in sorted(calls)], finish) == ("Need both.", expected, "tool_calls")
    assert fake.last_body["skip_special_tokens"] is False
    reply = client.chat.completions.create(**request)
    message = reply.choices[0].message
    assert (message.reasoning_content, message.content, reply.choices[0].finish_reason) == (
        "Need both.",
        None,
        "tool_calls",
    )
    assert [[c.function.name, c.function.arguments] for c in message.tool_calls] == expected
