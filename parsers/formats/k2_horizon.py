"""K2 Horizon / K2-v3 ("IFM" tokens): reasoning and tool calls
(docs/parsers.md `k2_horizon`).

The template opens the reply inside reasoning with one opener per
reasoning effort, and the model closes it with the matching closer:
high `<ifm|think>…</ifm|think>`, medium `<ifm|think_fast>…</ifm|think_fast>`,
low `<ifm|think_faster>…</ifm|think_faster>`. Any of the three closers
ends reasoning, whatever the request's effort: the gateway need not know
which effort the backend's template applied (templates and servers
disagree on the default), and a closer the parser did not expect would
otherwise turn the whole answer into reasoning. A tool call
(`<ifm|tool_call`) also ends it.

Tool calls, one call (two calls: two blocks in the group; see
`parsers.grammars.ifm_call` for the block grammar)::

    <ifm|tool_calls>
    <ifm|tool_call>get_weather
    <ifm|arg_key>city</ifm|arg_key>
    <ifm|arg_value>Paris</ifm|arg_value>
    </ifm|tool_call>
    </ifm|tool_calls>

Thinking blocks the tool-call stage still sees (no reasoning parser, or
`separate_reasoning: false`) are content as written: tool markup inside
them is not a call.
"""

from parsers.formats.table import register
from parsers.grammars.ifm_block import BLOCK_CLOSE, GROUP_CLOSE
from parsers.grammars.ifm_call import IfmCalls
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

THINKING = (
    ("<ifm|think>", "</ifm|think>"),
    ("<ifm|think_fast>", "</ifm|think_fast>"),
    ("<ifm|think_faster>", "</ifm|think_faster>"),
)
END_OF_TURN = ("<|ifm|im_end|>",)
MODELS = "K2 Horizon / K2-v3 (IFM tokens)"

register(
    ReasoningFormat(
        name="k2_horizon",
        models=MODELS,
        start=THINKING[0][0],
        end=THINKING[0][1],
        other_starts=tuple(opener for opener, _ in THINKING[1:]),
        other_ends=tuple(closer for _, closer in THINKING[1:]),
        tool_start="<ifm|tool_call",
        always_thinking=True,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="k2_horizon",
        models=MODELS,
        call_start="<ifm|tool_call",
        call_end="",
        body=IfmCalls,
        call_template=f"<ifm|tool_calls>\n<ifm|tool_call>{{name}}\n{{arguments}}{BLOCK_CLOSE}\n{GROUP_CLOSE}",
        render_arguments=ParameterTags("<ifm|arg_key>{key}</ifm|arg_key>\n<ifm|arg_value>{value}</ifm|arg_value>\n"),
        dropped_markers=(GROUP_CLOSE, BLOCK_CLOSE),
        passthrough_blocks=THINKING,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
    )
)
