"""Beam: Harmony-like channels, tool calls addressed by recipient with
`rfl:parameter` bodies (docs/parsers.md `beam`).

The `analysis` channel is reasoning (always on), `final` is content, and
a message to a recipient is a call; `<|start|>assistant` separates
messages, and the output starts after one::

    <|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">
    Paris
    </rfl:parameter><|call|>

A call ends at `<|call|>`, or at `<|end|>` when another message follows
(two calls: `…</rfl:parameter><|end|><|start|>assistant to=search…<|call|>`).
A value is the text between the newlines, typed by the tool schema.
"""

from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.harmony import CHANNEL, ChannelSyntax, HarmonyReasoningParser
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

MODELS = "Beam"
TERMINATORS = ("<|end|>", "<|return|>", "<|call|>")
MESSAGE_START = "<|start|>assistant"

register(
    ReasoningFormat(
        name="beam",
        models=MODELS,
        start="<|channel|>analysis<|message|>",
        end="<|end|>" + MESSAGE_START,
        always_thinking=True,
        needs_special_tokens=True,
        stage=partial(
            HarmonyReasoningParser,
            syntax=ChannelSyntax(
                header_starts=(CHANNEL,),
                terminators=TERMINATORS,
                fillers=frozenset(),
                message_start=MESSAGE_START,
                recipient_start=" to=",
            ),
        ),
    )
)
register(
    ToolFormat(
        name="beam",
        models=MODELS,
        call_start=" to=",
        call_end="",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=("<|message|>",),
                name_pattern=r"(?:functions\.)?(?P<name>[^\s<]+)\s*(?:<\|channel\|>\s*\w+\s*)?(?:<\|constrain\|>\s*\w+\s*)?",
                header_prefix=r"[^\s<]*\s*(?:<.*)?",
                key_open="<rfl:parameter",
                key_close=">",
                key_pattern=r'\s*name="(?P<key>[^"]+)"\s*',
                value_close="</rfl:parameter>",
                call_closes=TERMINATORS,
                # Inside a value they are text, as gpt-oss's `<|call|>` is
                # inside a JSON string.
                closes_after_value=TERMINATORS,
            ),
        ),
        call_template=" to={name}<|channel|>analysis <|constrain|>xml<|message|>{arguments}<|call|>",
        render_arguments=ParameterTags('<rfl:parameter name="{key}">\n{value}\n</rfl:parameter>'),
        dropped_markers=(*TERMINATORS, MESSAGE_START),
        needs_special_tokens=True,
    )
)
