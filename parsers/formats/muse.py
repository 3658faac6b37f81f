"""Muse Glimmer: channel messages addressed by recipient, tool calls as
ATEM XML (docs/parsers.md `muse`).

A message is `<|start|>assistant to=RECIPIENT<|message|>BODY<|eom|>` (or
`<|eot|>`); the prompt ends at `<|start|>assistant`, so the output starts
at ` to=`. `to=self` is reasoning (several such messages are joined with
a newline), `to=user` and `to=commentary` are content, any other recipient
is a tool channel whose body is a block of ATEM invokes::

     to=self<|message|>Need weather.<|eom|><|start|>assistant to=functions.get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    <atem:parameter name="days">2</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>

Two calls are two invokes in the block. Invoke names lose the `functions.`
namespace only (`functions.get_weather` is `get_weather`, `db.search-records`
stays whole, as vLLM's muse_glimmer parser keeps it); values are typed by the tool
schema (a string parameter `007` stays `"007"`), or JSON-decoded when the
schema does not type them.
"""

from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.channel_call import ChannelCall
from parsers.grammars.tag_call import TagCall
from parsers.stages.harmony import ChannelSyntax, HarmonyReasoningParser
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

MODELS = "Muse Glimmer"
TERMINATORS = ("<|eom|>", "<|eot|>")
MESSAGE_START = "<|start|>assistant"
NOT_TOOLS = ("self", "user", "commentary")

ATEM = ToolFormat(
    name="atem",
    models=MODELS,
    section_start="<atem:function_calls>",
    section_end="</atem:function_calls>",
    call_start="<atem:invoke",
    call_end="",
    body=partial(
        TagCall,
        syntax=TagSyntax(
            name_ends=(">",),
            name_pattern=r'\s*name="(?:functions\.)?(?P<name>[^"]+)"\s*(?P<empty>/)?\s*',
            key_open="<atem:parameter",
            key_close=">",
            key_pattern=r'\s*name="(?P<key>[^"]+)"\s*',
            value_close="</atem:parameter>",
            call_closes=("</atem:invoke>",),
            # Inside a value these are text, the message's terminators too
            # (`ChannelCall` hands those to the value).
            closes_after_value=("</atem:invoke>", "</atem:function_calls>", *TERMINATORS),
            trim="strip",
            untyped_json=True,
        ),
    ),
    call_template='<atem:function_calls>\n<atem:invoke name="{name}">\n{arguments}</atem:invoke>\n</atem:function_calls>',
    render_arguments=ParameterTags('<atem:parameter name="{key}">{value}</atem:parameter>\n'),
    dropped_markers=("</atem:function_calls>", "</atem:invoke>"),
)

register(
    ReasoningFormat(
        name="muse",
        models=MODELS,
        start=" to=self<|message|>",
        end="<|eom|>",
        always_thinking=True,
        needs_special_tokens=True,
        stage=partial(
            HarmonyReasoningParser,
            syntax=ChannelSyntax(
                header_starts=(),
                terminators=TERMINATORS,
                tool_header=r"\bto=(?!(?:" + "|".join(NOT_TOOLS) + r")(?![^\s<]))\S",
                reasoning_header=r"\bto=self(?![^\s<])",
                fillers=frozenset(),
                message_start=MESSAGE_START,
                recipient_start=" to=",
                reasoning_separator="\n",
            ),
        ),
    ),
    "muse_glimmer",
)
register(
    ToolFormat(
        name="muse",
        models=MODELS,
        call_start=" to=",
        call_end="",
        body=partial(ChannelCall, inner=ATEM, terminators=TERMINATORS, not_tools=NOT_TOOLS),
        call_template=MESSAGE_START + " to=functions.{name}<|message|>" + ATEM.call_template + TERMINATORS[0],
        render_arguments=ATEM.render_arguments,
        dropped_markers=(*TERMINATORS, MESSAGE_START),
        needs_special_tokens=True,
    ),
    "muse_glimmer",
)
