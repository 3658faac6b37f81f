"""Spark 2.5 tool calls (docs/parsers.md `spark25`): the `<arg_key>` family,
as data on the GLM syntax in `tool_tags`. The name may be followed by a
newline, directly by `<arg_key>`, or by `</tool_call>` (no arguments);
values are kept exactly as written, a value `null` (any case) is null
whatever the parameter's type, and `1`/`0` are true/false for a boolean::

    <tool_call>get_weather
    <arg_key>city</arg_key><arg_value>Paris</arg_value>
    </tool_call>

Blanks between `</arg_key>` and `<arg_value>` are read as formatting (SGLang
drops such a pair; parsegate keeps it).
"""

from dataclasses import replace
from functools import partial

from parsers.formats.table import register
from parsers.formats.tool_tags import GLM45, GLM_SYNTAX
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_format import ParameterTags

register(
    replace(
        GLM45,
        name="spark25",
        models="Spark 2.5",
        body=partial(
            TagCall,
            syntax=replace(
                GLM_SYNTAX,
                name_ends=("\n", "<arg_key>", "</tool_call>"),
                gap_pattern=r"\s*",
                null_word="null",
                digit_booleans=True,
            ),
        ),
        render_arguments=ParameterTags("<arg_key>{key}</arg_key><arg_value>{value}</arg_value>\n"),
    )
)
