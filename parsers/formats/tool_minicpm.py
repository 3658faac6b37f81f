"""MiniCPM 4 / 5 tool calls (docs/parsers.md `minicpm5`): plain-text XML,
no special marker; consecutive elements are several calls::

    <function name="get_weather"><param name="city">Paris</param><param name="days">2</param></function>

Values are XML character data, stripped, typed by the tool schema (a
value the schema does not type is JSON when it parses as JSON); a
`<![CDATA[…]]>` section in a value is taken literally.

Validation: since nothing but the tag marks a call, an element naming a
function the request does not offer is no call: it stays content, as
written, streamed or not. Once the name is known to be a tool, the call is
sent name first and its arguments as they arrive, like every tag format;
an unknown or repeated parameter, or a missing required one, is the
client's to judge (SGLang keeps such an element as content when not
streaming and silently drops it when streaming).
"""

from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

# The blank before `name` may be missing (`<functionname="…">`) or left as
# the byte-level tokenizer's space mark `Ġ` (U+0120), as MiniCPM 5
# checkpoints' detokenized output shows (vLLM `minicpm5`).
_BLANK = "[\\s\u0120]*"
_ATTRIBUTE = _BLANK + r"""name\s*=\s*(?P<quote>["'])(?P<{}>[^"'<>]+)(?P=quote)\s*"""
# What the header may be while its `>` has not come: prose that only
# began like `<function` gives up at once.
_ATTRIBUTE_SO_FAR = _BLANK + r"""(?:n(?:a(?:m(?:e\s*(?:=\s*(?:["'][^"'<>]*(?:["']\s*)?)?)?)?)?)?)?"""

register(
    ToolFormat(
        name="minicpm5",
        models="MiniCPM 4 / 5",
        call_start="<function",
        call_end="",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=(">",),
                name_pattern=_ATTRIBUTE.format("name"),
                header_prefix=_ATTRIBUTE_SO_FAR,
                key_open="<param",
                key_close=">",
                key_pattern=_ATTRIBUTE.format("key"),
                value_close="</param>",
                call_closes=("</function>",),
                closes_after_value=("</function>",),  # text inside a value
                trim="strip",
                untyped_json=True,
                unescape_xml=True,
                cdata=True,
                known_names_only=True,
            ),
        ),
        call_template='<function name="{name}">{arguments}</function>',
        render_arguments=ParameterTags('<param name="{key}">{value}</param>'),
    )
)
