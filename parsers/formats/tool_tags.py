"""Tool calls written as key/value tags, typed by the tool's schema
(docs/parsers.md). The arguments JSON is built as the tags stream in.

Qwen3-Coder (two calls: two `<tool_call>` blocks)::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

A `<function=…>` block with no `<tool_call>` around it (about one tool turn
in five from Qwen3-Coder) is a call too, as vLLM reads it.

MiMo writes the same tags, values neither trimmed nor on their own lines,
HTML-escaped (`<parameter=q>a &amp; b</parameter>` is `a & b`).

GLM-4.5 (`glm47` drops the newlines)::

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

MiniMax M2 (several `<invoke>` per block)::

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    </minimax:tool_call>
"""

from dataclasses import replace
from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

QWEN3_CODER_SYNTAX = TagSyntax(
    name_ends=(">",),
    name_pattern=r"\s*<function=(?P<name>[^>\n]+?)\s*",
    key_open="<parameter=",
    key_close=">",
    value_close="</parameter>",
    value_also_ends_at=("<parameter=",),  # a `</parameter>` left out, as SGLang and vLLM read it
    call_closes=("</function>", "</tool_call>"),
    closes_after_value=("</function>", "</tool_call>"),
)
QWEN3_CODER = ToolFormat(
    name="qwen3_coder",
    models="Qwen3-Coder, Qwen3.5 / 3.6",
    call_start="<tool_call>",
    call_end="</tool_call>",
    unmarked_starts=("<function=",),
    body=partial(TagCall, syntax=QWEN3_CODER_SYNTAX),
    call_template="<tool_call>\n<function={name}>\n{arguments}</function>\n</tool_call>",
    render_arguments=ParameterTags("<parameter={key}>\n{value}\n</parameter>\n"),
)
register(QWEN3_CODER, "qwen3_xml")
register(replace(QWEN3_CODER, name="step3p5", models="StepFun Step-3.5"))
register(replace(QWEN3_CODER, name="nanbeige", models="Nanbeige"))
register(
    replace(
        QWEN3_CODER,
        name="mimo",
        models="Xiaomi MiMo",
        body=partial(TagCall, syntax=replace(QWEN3_CODER_SYNTAX, trim="none", unescape_html=True)),
        render_arguments=ParameterTags("<parameter={key}>{value}</parameter>\n"),
    )
)

GLM_SYNTAX = TagSyntax(
    name_ends=("\n", "\\n"),
    name_pattern=r"\s*(?P<name>[^\s<]+)\s*",
    key_open="<arg_key>",
    key_close="</arg_key>",
    value_open="<arg_value>",
    value_close="</arg_value>",
    call_closes=("</tool_call>",),
    trim="none",
    gap_pattern=r"(?:\s|\\n)*",
)
GLM45 = ToolFormat(
    name="glm45",
    models="GLM-4.5 / 4.6, Ring",
    call_start="<tool_call>",
    call_end="",
    body=partial(TagCall, syntax=GLM_SYNTAX),
    call_template="<tool_call>{name}\n{arguments}</tool_call>",
    render_arguments=ParameterTags("<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n"),
    needs_special_tokens=True,
)
register(GLM45, "glm")
register(
    replace(
        GLM45,
        name="glm47",
        body=partial(TagCall, syntax=replace(GLM_SYNTAX, name_ends=("\n", "\\n", "<arg_key>", "</tool_call>"))),
        models="GLM-4.7, GLM-5",
        call_template="<tool_call>{name}{arguments}</tool_call>",
        render_arguments=ParameterTags("<arg_key>{key}</arg_key><arg_value>{value}</arg_value>"),
    )
)

register(
    ToolFormat(
        name="minimax-m2",
        models="MiniMax M2 / M2.1",
        section_start="<minimax:tool_call>",
        section_end="</minimax:tool_call>",
        call_start="<invoke",
        call_end="",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=(">",),
                name_pattern=r"\s*name=\"?(?P<name>[^\">]+?)\"?\s*",
                key_open="<parameter",
                key_close=">",
                key_pattern=r"\s*name=\"?(?P<key>[^\">]+?)\"?\s*",
                value_close="</parameter>",
                call_closes=("</invoke>",),
                trim="strip",
            ),
        ),
        call_template='<minimax:tool_call>\n<invoke name="{name}">\n{arguments}</invoke>\n</minimax:tool_call>',
        render_arguments=ParameterTags('<parameter name="{key}">{value}</parameter>\n'),
    )
)
