"""GigaChat 3.5 "GCML" tool calls (docs/parsers.md `gigachat35`): DeepSeek's
DSML elements under the `｜GCML｜` namespace (`｜` is U+FF5C). Every
parameter says its type: `string="true"` keeps the text exactly as written,
`string="false"` is JSON (the stripped text when it is not).

Two calls: two `invoke` elements in the block::

    <｜GCML｜tool_calls>
    <｜GCML｜invoke name="get_weather">
    <｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>
    <｜GCML｜parameter name="days" string="false">2</｜GCML｜parameter>
    </｜GCML｜invoke>
    </｜GCML｜tool_calls>
"""

from dataclasses import replace
from functools import partial

from parsers.formats.table import register
from parsers.formats.tool_dsml import DSML
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags


def _gcml(text: str) -> str:
    return text.replace("｜DSML｜", "｜GCML｜")


register(
    ToolFormat(
        name="gigachat35",
        models="GigaChat 3.5",
        section_start="<｜GCML｜tool_calls>",
        section_end="</｜GCML｜tool_calls>",
        call_start="<｜GCML｜invoke",
        call_end="",
        body=partial(
            TagCall,
            syntax=replace(
                DSML,
                key_open=_gcml(DSML.key_open),
                value_close=_gcml(DSML.value_close),
                call_closes=(_gcml("</｜DSML｜invoke>"),),
                closes_after_value=(_gcml("</｜DSML｜invoke>"), "</｜GCML｜tool_calls>"),
                trim="none",
                json_body=False,
            ),
        ),
        call_template=(
            '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="{name}">\n{arguments}</｜GCML｜invoke>\n</｜GCML｜tool_calls>'
        ),
        render_arguments=ParameterTags('<｜GCML｜parameter name="{key}" string="false">{value}</｜GCML｜parameter>\n'),
        dropped_markers=("</｜GCML｜tool_calls>", "</｜GCML｜invoke>", "<|message_sep|>"),
        end_of_turn=("</s>",),
        needs_special_tokens=True,
    )
)
