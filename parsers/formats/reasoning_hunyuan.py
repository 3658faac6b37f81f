"""Tencent Hunyuan Hy3 / Hy4 reasoning (docs/parsers.md `hunyuan`):
`<think>reasoning</think>answer`, ended early by a `<tool_calls>` block.
Checkpoints that suffix their tokens (`<think:opensource>`) are read the
same (`parsers.stages.token_suffix`).

Thinking is switched by the reasoning effort the chat template reads:
`chat_template_kwargs.reasoning_effort` (`"none"` and `"no_think"` are
off, any other level on), else the `enable_thinking` / `thinking` switch
the gateway derives from a request's `reasoning_effort`; with neither,
off, as the templates default to `no_think`.
"""

from dataclasses import dataclass

from parsers.formats.table import register
from parsers.formats.tool_hunyuan import END_OF_TURN, HUNYUAN_TOKENS
from parsers.stages.reasoning import EFFORTS_OFF, ReasoningFormat


@dataclass(frozen=True)
class EffortSwitchedFormat(ReasoningFormat):
    """A reasoning format whose template reads an effort level
    (`effort_switch` in `chat_template_kwargs`) before the plain switches."""

    effort_switch: str = "reasoning_effort"

    def thinking_enabled(self, chat_template_kwargs: dict | None) -> bool:
        effort = (chat_template_kwargs or {}).get(self.effort_switch)
        if effort is not None:
            return effort not in EFFORTS_OFF
        return super().thinking_enabled(chat_template_kwargs)


register(
    EffortSwitchedFormat(
        name="hunyuan",
        models="Tencent Hunyuan Hy3 / Hy4; on by `reasoning_effort` other than `none` / `no_think`",
        tool_start="<tool_calls>",
        thinking_switches=("enable_thinking", "thinking"),
        thinking_by_default=False,
        end_of_turn=END_OF_TURN,
        needs_special_tokens=True,
        suffixed_tokens=HUNYUAN_TOKENS,
    ),
    "hy_v3",
    "hy_v4",
)
