"""More of the `<arg_key>`/`<arg_value>` family (docs/parsers.md), as data on
the GLM syntax in `tool_tags`.

Ling 3 writes GLM-4.5's calls, the newline after the name optional
(`ling3` reads both the glm45 and the glm47 spelling)::

    <tool_call>get_weather
    <arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

IQuest Q1 wraps the glm47 spelling in its own markers; values are kept
exactly as written::

    <iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></iquest_tool_call>

Poolside Laguna: the name ends at a newline, `<arg_key>` or `</tool_call>`;
a value loses one newline at each end::

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>
"""

from dataclasses import replace
from functools import partial

from parsers.formats.table import register
from parsers.formats.tool_tags import GLM45, GLM_SYNTAX
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

COMPACT_PAIR = "<arg_key>{key}</arg_key><arg_value>{value}</arg_value>"

register(
    replace(
        GLM45,
        name="ling3",
        models="Ling 3",
        body=partial(TagCall, syntax=replace(GLM_SYNTAX, name_ends=("\n", "\\n", "<arg_key>", "</tool_call>"))),
    )
)

register(
    ToolFormat(
        name="iquest_q1",
        models="IQuest Q1",
        call_start="<iquest_tool_call>",
        call_end="",
        body=partial(
            TagCall,
            syntax=replace(
                GLM_SYNTAX,
                name_ends=("<arg_key>", "</iquest_tool_call>"),
                call_closes=("</iquest_tool_call>",),
            ),
        ),
        call_template="<iquest_tool_call>{name}{arguments}</iquest_tool_call>",
        render_arguments=ParameterTags(COMPACT_PAIR),
        needs_special_tokens=True,
    )
)

register(
    replace(
        GLM45,
        name="poolside_v1",
        models="Poolside Laguna XS.2 / S-2.1",
        body=partial(
            TagCall,
            syntax=replace(
                GLM_SYNTAX,
                name_ends=("\n", "<arg_key>", "</tool_call>"),
                key_pattern=r"\s*(?P<key>[^<]+?)\s*",
                trim="newline",
                gap_pattern=r"\s*",
            ),
        ),
    )
)
