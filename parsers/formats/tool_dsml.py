"""DeepSeek's DSML tool calls (docs/parsers.md `deepseekv32`): `invoke`
elements with `parameter` children typed by their `string` attribute, or
with one JSON object for arguments. `｜` is U+FF5C.

DeepSeek V4 names the block `tool_calls`; V4.1 names it ` calls` and
puts a space after `｜DSML｜` in every tag.

One call (two calls: two `invoke` elements in the block; bare invokes
without the block also parse)::

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

`string="true"` keeps the text (stripped); `string="false"` is JSON, or
the text when it is not. `<｜DSML｜invoke name="x"/>` is a call without arguments.

The templates write a blank line before the block (`\n\n<｜DSML｜tool_calls>`):
that separator belongs to the block, not to the text before it, as
llama.cpp's test-chat.cpp DeepSeek V3.2 / V4 cases read it.
"""

from dataclasses import replace
from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

DSML = TagSyntax(
    name_ends=(">",),
    name_pattern=r"\s*name=\"(?P<name>[^\"]+)\"\s*(?P<empty>/)?\s*",
    key_open="<｜DSML｜parameter",
    key_close=">",
    key_pattern=r"\s*name=\"(?P<key>[^\"]+)\"(?:\s+string=\"(?P<string>true|false)\")?\s*",
    value_close="</｜DSML｜parameter>",
    call_closes=("</｜DSML｜invoke>",),
    # Inside a value the call's and the block's close are text (see
    # `closes_after_value`): the templates write a value as it is.
    closes_after_value=("</｜DSML｜invoke>", "</｜DSML｜function_calls>"),
    trim="strip",
    json_body=True,
)
SEPARATOR = "\n\n"  # the template's blank line before a block
PARAMETER = '<｜DSML｜parameter name="{key}" string="false">{value}</｜DSML｜parameter>\n'
DEEPSEEK_V32 = ToolFormat(
    name="deepseekv32",
    models="DeepSeek V3.2",
    section_start="<｜DSML｜function_calls>",
    other_section_starts=(SEPARATOR + "<｜DSML｜function_calls>",),
    section_end="</｜DSML｜function_calls>",
    call_start="<｜DSML｜invoke",
    call_end="",
    body=partial(TagCall, syntax=DSML),
    call_template=(
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="{name}">\n{arguments}</｜DSML｜invoke>\n</｜DSML｜function_calls>'
    ),
    render_arguments=ParameterTags(PARAMETER),
    dropped_markers=("</｜DSML｜function_calls>", "</｜DSML｜invoke>"),
    end_of_turn=("<｜end▁of▁sentence｜>",),
    needs_special_tokens=True,
)
register(DEEPSEEK_V32)
register(
    replace(
        DEEPSEEK_V32,
        name="deepseekv4",
        models="DeepSeek V4",
        section_start="<｜DSML｜tool_calls>",
        other_section_starts=(SEPARATOR + "<｜DSML｜tool_calls>",),
        section_end="</｜DSML｜tool_calls>",
        body=partial(TagCall, syntax=replace(DSML, closes_after_value=("</｜DSML｜invoke>", "</｜DSML｜tool_calls>"))),
        call_template=(
            '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="{name}">\n{arguments}</｜DSML｜invoke>\n</｜DSML｜tool_calls>'
        ),
        dropped_markers=("</｜DSML｜tool_calls>", "</｜DSML｜invoke>"),
    ),
    "deepseek_v4",
)


def _spaced(text: str) -> str:
    return text.replace("｜DSML｜", "｜DSML｜ ")


register(
    replace(
        DEEPSEEK_V32,
        name="deepseekv41",
        models="DeepSeek V4.1",
        section_start="<｜DSML｜ calls>",
        other_section_starts=(SEPARATOR + "<｜DSML｜ calls>",),
        section_end="</｜DSML｜ calls>",
        call_start=_spaced(DEEPSEEK_V32.call_start),
        body=partial(
            TagCall,
            syntax=replace(
                DSML,
                key_open=_spaced(DSML.key_open),
                value_close=_spaced(DSML.value_close),
                call_closes=(_spaced("</｜DSML｜invoke>"),),
                closes_after_value=(_spaced("</｜DSML｜invoke>"), "</｜DSML｜ calls>"),
            ),
        ),
        call_template=(
            _spaced('<｜DSML｜invoke name="{name}">\n{arguments}</｜DSML｜invoke>\n').join(
                ("<｜DSML｜ calls>\n", "</｜DSML｜ calls>")
            )
        ),
        render_arguments=ParameterTags(_spaced(PARAMETER)),
        dropped_markers=("</｜DSML｜ calls>", _spaced("</｜DSML｜invoke>")),
    )
)
