"""Tencent Hunyuan Hy3 / Hy4 tool calls (docs/parsers.md `hunyuan`): a
`<tool_calls>` block of `<tool_call>` elements, the name ended by
`<tool_sep>` (Hy3) or directly by the first `<arg_key>` (Hy4), values
typed by the tool schema::

    <tool_calls>
    <tool_call>get_weather<tool_sep>
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>
    </tool_calls>

The shipping Hy3 tokenizer appends a suffix to every one of these tokens
(`<tool_calls:opensource>`, `<arg_key:opensource>`, …): any suffix is
read as the bare token (`parsers.stages.token_suffix`).
"""

from dataclasses import replace
from functools import partial

from parsers.formats.table import register
from parsers.formats.tool_tags import GLM_SYNTAX
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

HUNYUAN_TOKENS = ("think", "tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value", "hy_eos")
END_OF_TURN = ("<｜hy_eos｜>",)

register(
    ToolFormat(
        name="hunyuan",
        models="Tencent Hunyuan Hy3 (preview and release), Hy4",
        section_start="<tool_calls>",
        section_end="</tool_calls>",
        call_start="<tool_call>",
        call_end="",
        body=partial(
            TagCall,
            syntax=replace(
                GLM_SYNTAX,
                name_ends=("<tool_sep>", "<arg_key>", "</tool_call>"),
                gap_pattern=r"\s*",
            ),
        ),
        call_template="<tool_calls>\n<tool_call>{name}<tool_sep>\n{arguments}</tool_call>\n</tool_calls>",
        render_arguments=ParameterTags("<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n"),
        dropped_markers=("</tool_calls>",),
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
        suffixed_tokens=HUNYUAN_TOKENS,
    ),
    "hy_v3",
    "hy_v4",
)
