"""Inkling: typed message blocks of control tokens, for reasoning and tool
calls (docs/parsers.md `inkling`; `parsers.stages.inkling` reads the blocks,
`parsers.grammars.inkling_call` one invocation).

One call (two calls: two such messages)::

    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>

Every control token is a special token the backend must keep, and none
reaches content: the tool-call stage drops strays, and text that began
like a call but held none is returned without them.
"""

from parsers.core.inkling_tokens import CONTROL_TOKENS, END_MESSAGE, MESSAGE_MODEL, THINKING
from parsers.formats.table import register
from parsers.grammars.inkling_call import INVOKE_PREFIX, InklingCall
from parsers.stages.inkling import InklingReasoningParser
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

MODELS = "Inkling"
END_OF_TURN = ("<|endoftext|>",)

register(
    ReasoningFormat(
        name="inkling",
        models=MODELS,
        start=MESSAGE_MODEL + THINKING,
        end=END_MESSAGE,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
        stage=InklingReasoningParser,
    )
)
register(
    ToolFormat(
        name="inkling",
        models=MODELS,
        call_start=MESSAGE_MODEL,
        other_call_starts=(INVOKE_PREFIX,),
        call_end="",
        body=InklingCall,
        call_template=MESSAGE_MODEL
        + '{name}<|content_invoke_tool_json|>{"name": "{name}", "args": {arguments}}'
        + END_MESSAGE,
        dropped_markers=tuple(
            token for token in CONTROL_TOKENS if token != MESSAGE_MODEL and not token.startswith(INVOKE_PREFIX)
        ),
        fallback_drops=CONTROL_TOKENS,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
