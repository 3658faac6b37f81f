"""rednote dots.llm tool calls (docs/parsers.md `dots`): a
`<dots_function_call>` block of `invoke` elements whose parameters are
typed by the tool's schema (values stripped), or of one JSON call object.
The name attributes may be quoted (`"` or `'`) or bare.

Two calls in one block (several blocks also work)::

    <dots_function_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    <invoke name="search">
    <parameter name="query">louvre</parameter>
    </invoke>
    </dots_function_call>

or ``<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</dots_function_call>``.
"""

from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.call_block import CallBlock
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

_ATTRIBUTE = r"""\s+name\s*=\s*(?P<quote>["']?)(?P<{}>[^"'>]+?)(?P=quote)\s*"""

register(
    ToolFormat(
        name="dots",
        models="rednote dots.llm",
        call_start="<dots_function_call>",
        call_end="</dots_function_call>",
        body=partial(
            CallBlock,
            element_start="<invoke",
            element=partial(
                TagCall,
                syntax=TagSyntax(
                    name_ends=(">",),
                    name_pattern=_ATTRIBUTE.format("name"),
                    key_open="<parameter",
                    key_close=">",
                    key_pattern=_ATTRIBUTE.format("key"),
                    value_close="</parameter>",
                    call_closes=("</invoke>",),
                    closes_after_value=("</invoke>", "</dots_function_call>"),  # text inside a value
                    trim="strip",
                ),
            ),
        ),
        call_template='<dots_function_call>\n<invoke name="{name}">\n{arguments}</invoke>\n</dots_function_call>',
        render_arguments=ParameterTags('<parameter name="{key}">{value}</parameter>\n'),
        dropped_markers=("</dots_function_call>",),
    )
)
