"""StepFun Step-3 tool calls (docs/parsers.md `step3`): `steptml` invoke
elements inside Step-3's call tokens, values typed by the tool schema.
The markers use `｜` (U+FF5C) with ASCII underscores; the call type before
`<｜tool_sep｜>` must be `function`. Real output also leaves that header
out (the invoke right after `<｜tool_call_begin｜>`) or names the function
in it (`function<｜tool_sep｜>get_weather\n<steptml:invoke …>`); the
invoke's name decides.

One call (two calls: two `<｜tool_call_begin｜>…<｜tool_call_end｜>` in the block)::

    <｜tool_calls_begin｜>
    <｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">
    <steptml:parameter name="city">Paris</steptml:parameter>
    </steptml:invoke><｜tool_call_end｜>
    <｜tool_calls_end｜>
"""

from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

register(
    ToolFormat(
        name="step3",
        models="StepFun Step-3",
        section_start="<｜tool_calls_begin｜>",
        section_end="<｜tool_calls_end｜>",
        call_start="<｜tool_call_begin｜>",
        call_end="<｜tool_call_end｜>",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=('">',),
                name_pattern=r'\s*(?:function\s*<｜tool_sep｜>[^<]*)?<steptml:invoke\s+name="(?P<name>[^"]+)',
                key_open="<steptml:parameter",
                key_close=">",
                key_pattern=r'\s*name="(?P<key>[^"]+)"\s*',
                value_close="</steptml:parameter>",
                call_closes=("</steptml:invoke>",),
                # Text inside a value, the call tokens after the invoke's close too.
                closes_after_value=("</steptml:invoke>", "<｜tool_call_end｜>", "<｜tool_calls_end｜>"),
                trim="strip",
            ),
        ),
        call_template=(
            "<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜>"
            '<steptml:invoke name="{name}">\n{arguments}</steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>'
        ),
        render_arguments=ParameterTags('<steptml:parameter name="{key}">{value}</steptml:parameter>\n'),
        dropped_markers=("<｜tool_calls_end｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"),
        needs_special_tokens=True,
    )
)
