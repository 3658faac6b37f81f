"""Formats declared as transformers response templates parse as
transformers' own `parse_response` does, streamed at every chunk split;
templates with constructs that cannot be streamed are refused by name."""

from __future__ import annotations

import pytest
from transformers.cli.serving import utils as serving
from transformers.utils import chat_parsing

from bench.workloads import streamed_cpu_seconds
from parsers.core.events import CallArgs
from parsers.formats.response_template import ResponseTemplateError, compile_response_template
from parsers.pipeline import ParseResult, make_pipeline, parse_text
from tests.response_templates import (
    NAMED,
    NAMED_OUTPUTS,
    QWEN3,
    QWEN3_OUTPUTS,
    QWEN35,
    QWEN35_OUTPUTS,
    TAGGED,
    TAGGED_OUTPUTS,
    TOOLS,
)

CASES = (
    [(QWEN3, text) for text in QWEN3_OUTPUTS]
    + [(NAMED, text) for text in NAMED_OUTPUTS]
    + [(QWEN35, text) for text in QWEN35_OUTPUTS]
    + [(TAGGED, text) for text in TAGGED_OUTPUTS]
)


def transformers_result(template: dict, text: str) -> dict:
    message = chat_parsing.parse_response(text, template, prefix="", tools=TOOLS)
    return {
        "reasoning_content": message.get("reasoning_content"),
        "content": message.get("content"),
        "tool_calls": [call["function"] for call in message.get("tool_calls", [])],
    }


def parsed(template: dict, text: str, cuts: list[int]) -> dict:
    pipeline_options = compile_response_template(template).pipeline_options()
    pipeline = make_pipeline(tools=TOOLS, **pipeline_options)
    result = ParseResult()
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        result.add(pipeline.feed(text[start:end]))
    result.add(pipeline.finish())
    return result.to_json()


@pytest.mark.parametrize(("template", "text"), CASES)
def test_equals_transformers_at_every_split(template: dict, text: str) -> None:
    expected = transformers_result(template, text)
    assert parsed(template, text, []) == expected
    assert parsed(template, text, list(range(1, len(text)))) == expected
    for cut in range(1, len(text)):
        assert parsed(template, text, [cut]) == expected, cut


def test_transformers_shipped_qwen_template_compiles_to_the_same_parse() -> None:
    shipped = next(v for k, v in serving._RESPONSE_TEMPLATE_FALLBACKS.items() if "qwen3" in k)
    for text in QWEN3_OUTPUTS:
        assert parsed(shipped, text, list(range(1, len(text)))) == transformers_result(shipped, text)


def test_linear_in_the_output_length() -> None:
    options = compile_response_template(QWEN3).pipeline_options()
    big = "x" * 200_000
    text = (
        f'<think>{big}</think>{big}<tool_call>{{"name": "get_weather", "arguments": {{"city": "{big}"}}}}</tool_call>'
    )
    result = parse_text(text, chunk_size=4, tools=TOOLS, **options)
    assert result.reasoning_content == big and result.content == big
    assert result.tool_calls == [("get_weather", f'{{"city": "{big}"}}')]


def test_only_a_value_whose_declared_type_differs_is_held_until_it_ends() -> None:
    pipeline = make_pipeline(tools=TOOLS, **compile_response_template(QWEN3).pipeline_options())
    head = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    streamed = "".join(e.text for e in pipeline.feed(head) if type(e) is CallArgs)
    assert streamed == '{"city": "Par'
    streamed = "".join(e.text for e in pipeline.feed('is", "days": "1') if type(e) is CallArgs)
    assert streamed == 'is", "days": '
    streamed = "".join(e.text for e in pipeline.feed('2", "metric": true}}</tool_call>') if type(e) is CallArgs)
    assert streamed == '12, "metric": true}'


def test_typed_arguments_stream_in_linear_time() -> None:
    """A long string argument streamed and a long held one: 64 KB costs
    less than 16x what 8 KB costs (about 8x when linear)."""
    options = compile_response_template(QWEN3).pipeline_options()

    def cost(kb: int) -> float:
        big = "7" * (kb * 512)
        text = f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "{big}", "days": "{big}"}}}}</tool_call>'
        return min(streamed_cpu_seconds(make_pipeline(tools=TOOLS, **options), text)[0] for _ in range(3))

    small, large = cost(8), cost(64)
    assert large < 16 * small, f"8 KB: {small:.4f}s, 64 KB: {large:.4f}s"


def test_xml_inline_calls_stream_in_linear_time() -> None:
    """A long string parameter streamed and a long held one, as tags."""
    options = compile_response_template(QWEN35).pipeline_options()

    def cost(kb: int) -> float:
        big = "7" * (kb * 512)
        text = (
            f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{big}\n</parameter>\n"
            f"<parameter=days>\n{big}\n</parameter>\n</function>\n</tool_call>"
        )
        return min(streamed_cpu_seconds(make_pipeline(tools=TOOLS, **options), text)[0] for _ in range(3))

    small, large = cost(8), cost(64)
    assert large < 16 * small, f"8 KB: {small:.4f}s, 64 KB: {large:.4f}s"


def with_field(template: dict, name: str, **changes) -> dict:
    field = {**template["fields"].get(name, {}), **changes}
    fields = {**template["fields"], name: {key: value for key, value in field.items() if value is not None}}
    return {**template, "fields": fields}


@pytest.mark.parametrize(
    ("template", "named"),
    [
        (with_field(QWEN3, "tool_calls", content="kv-lines"), "content 'kv-lines' cannot be streamed"),
        (with_field(QWEN3, "tool_calls", content="xml-inline"), "the xml-inline transform must be"),
        (
            with_field(
                QWEN35,
                "tool_calls",
                content_args={"tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)</p>", "merge_duplicates": True},
            ),
            "content_args ['merge_duplicates']",
        ),
        (
            with_field(QWEN35, "tool_calls", content_args={"tag_pattern": r"(?P<key>\w+)=(?P<value>.*?);"}),
            "tag_pattern must be",
        ),
        (with_field(QWEN35, "tool_calls", close_pattern=r"</function>(?:\s|x)*"), "close_pattern"),
        (with_field(QWEN35, "tool_calls", open_pattern="<tool_call>"), "open_pattern must be"),
        (with_field(QWEN3, "tool_calls", content_args={"unquoted_keys": True}), "['unquoted_keys']"),
        (with_field(QWEN3, "reasoning_content", open_pattern="<think.*?>", open=None), "'.'"),
        (with_field(QWEN3, "tool_calls", join=","), "'join' is not supported"),
        (with_field(QWEN3, "summary", open="<s>"), "field 'summary' has no place"),
        (with_field(NAMED, "tool_calls", open_pattern=r"<call>(?P<name>\w+)"), "a literal marker after"),
        ({**QWEN3, "version": 2}, "version 2"),
    ],
)
def test_refuses_what_cannot_stream_naming_the_construct(template: dict, named: str) -> None:
    with pytest.raises(ResponseTemplateError) as raised:
        compile_response_template(template)
    assert named in str(raised.value)


def test_transformers_shipped_templates_it_cannot_stream_are_refused() -> None:
    by_model = {k[0]: v for k, v in serving._RESPONSE_TEMPLATE_FALLBACKS.items()}
    with pytest.raises(ResponseTemplateError, match="string_delims"):
        compile_response_template(by_model["gemma4"])
