"""Upstage Solar Open 2 (docs/peer-formats.md `solar_open2`), as vLLM's
`solar_open2` parsers read it (vllm/tool_parsers/solar_open2_tool_parser.py,
vllm/reasoning/solar_open2_reasoning_parser.py,
https://github.com/vllm-project/vllm).

The template prefills `<|think:start|>`, so the output starts inside the
reasoning, which `<|think:end|>` ends. A call is the function's name on
the rest of the start marker's line, then one tag group per argument;
values are written raw and typed by the tool's schema::

    Need the weather.<|think:end|>Checking.<|tool_call:start|>get_weather
    <|tool_arg:start|>city<|tool_arg:value|>Paris<|tool_arg:end|><|tool_arg:start|>days<|tool_arg:value|>2<|tool_arg:end|><|tool_call:end|>

Two calls are two `<|tool_call:start|>` blocks. A call written before
`<|think:end|>` ends the reasoning, as vLLM's streaming parser reads it.
Whether the prefilled block is open follows the reasoning effort the
template reads: `chat_template_kwargs.reasoning_effort` `medium`, `high`,
`xhigh` or none keeps it open (the template's default is high), any other
effort closes it; without that key the `enable_thinking` / `thinking`
switches say it.
"""

from dataclasses import dataclass
from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.table import register
from parsers.grammars.tag_call import TagCall
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

MODELS = "Upstage Solar Open 2"
CALL_START, CALL_END = "<|tool_call:start|>", "<|tool_call:end|>"
ARG_START, ARG_VALUE, ARG_END = "<|tool_arg:start|>", "<|tool_arg:value|>", "<|tool_arg:end|>"
# The efforts whose generation prompt leaves `<|think:start|>` open (vLLM's `_OPEN_REASONING_EFFORTS`).
OPEN_EFFORTS = ("medium", "high", "xhigh")


@dataclass(frozen=True)
class OpenEffortsFormat(ReasoningFormat):
    """Thinking on for a `reasoning_effort` template kwarg among
    `open_efforts`, off for any other; without one, the plain switches."""

    open_efforts: tuple[str, ...] = ()

    def thinking_enabled(self, chat_template_kwargs: dict | None) -> bool:
        effort = (chat_template_kwargs or {}).get("reasoning_effort")
        if effort is not None:
            return effort in self.open_efforts
        return super().thinking_enabled(chat_template_kwargs)


register(
    OpenEffortsFormat(
        name="solar_open2",
        models=MODELS,
        start="<|think:start|>",
        end="<|think:end|>",
        tool_start=CALL_START,
        thinking_switches=("enable_thinking", "thinking"),
        open_efforts=OPEN_EFFORTS,
        needs_special_tokens=True,
    )
)
register(
    ToolFormat(
        name="solar_open2",
        models=MODELS,
        call_start=CALL_START,
        call_end="",
        body=partial(
            TagCall,
            syntax=TagSyntax(
                name_ends=("\n",),
                name_pattern=r"\s*(?P<name>[^\s<]+)\s*",
                key_open=ARG_START,
                key_close=ARG_VALUE,
                value_close=ARG_END,
                # A value whose end marker was dropped ends at the next argument, or at the
                # call's end last in the output (inside a value it is text); a call whose end
                # marker was dropped ends at the next call's start, and a key at any of them
                # (vLLM tests/tool_parsers/test_solar_open2_tool_parser.py, dropped_*).
                value_also_ends_at=(ARG_START,),
                call_closes=(CALL_END,),
                closes_after_value=(CALL_END,),
                call_also_ends_at=(CALL_START,),
                trim="none",
                # `1` / `0` for a boolean parameter (the same test, TestTypeCoercion.test_boolean).
                digit_booleans=True,
            ),
        ),
        call_template=CALL_START + "{name}\n{arguments}" + CALL_END,
        render_arguments=ParameterTags(ARG_START + "{key}" + ARG_VALUE + "{value}" + ARG_END),
        dropped_markers=(CALL_END,),
        needs_special_tokens=True,
    )
)
