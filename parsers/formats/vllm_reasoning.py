"""Reasoning formats that only vLLM parses, under vLLM's
`--reasoning-parser` names.

IBM Granite 3.2 / 3.3 (`granite`): plain-text headers, `Here is` or
`Here's`; reasoning only between them::

    Here is my thought process: Need the weather. Here is my response: It is sunny.

Baidu ERNIE 4.5 Thinking (`ernie45`): the template opens the reasoning;
the answer may be wrapped in `<response>` tags, which are removed::

    Need the weather.\\n</think>\\n\\n<response>\\nIt is sunny.\\n</response>\\n

Tencent Hunyuan-A13B (`hunyuan_a13b`): `<think>` and `<answer>` blocks::

    <think>\\nNeed the weather.\\n</think>\\n<answer>\\nIt is sunny.\\n</answer>

H Company Holo2 (`holo2`), AllenAI OLMo 3 Think (`olmo3`): Qwen3's tags,
the template writes `<think>`, so the output starts in reasoning unless a
request turns thinking off (`thinking` / `enable_thinking`: false)::

    Need the weather.</think>It is sunny.

ByteDance Seed-OSS (`seed_oss`): its own tags; only `</seed:think>` ends
reasoning (the model writes out the call syntax while it thinks, as vLLM's
and llama.cpp's parsers read it). The reply starts in reasoning unless the
request sets `thinking_budget: 0`, for which the template closes the think
block in the prompt and the model answers straight away::

    <seed:think>Need the weather.</seed:think>It is sunny.
    It is sunny.                                (thinking_budget: 0)

LG EXAONE 4.0 (`exaone4`), RWKV (`rwkv`): Qwen3's tags; reasoning from
the start only with `enable_thinking: true`, otherwise from a `<think>`.

Sber GigaChat 3.5 (`gigachat35`): Qwen3's tags, the template writes
`<think>` only with `reasoning: true` (off by default), as vLLM's
`GigaChat35ReasoningParser` reads it::

    Need the weather.</think>It is sunny.       (reasoning: true)
    It is sunny.

Preferred Networks PLaMo 3 (`plamo3`): its own tags, opened by the
template unless `enable_thinking: false`; `<|plamo:tag|>` ends the turn::

    Need the weather.<|plamo:end_think:plamo|>It is sunny.<|plamo:tag|>

`hy_v3` (Hunyuan Hy3) is a name of the `hunyuan` format and
`granite_thinking` of `granite_thinking_parser`.
"""

from dataclasses import dataclass, replace

from parsers.formats.reasoning_think import QWEN3
from parsers.formats.table import register
from parsers.stages.reasoning import ReasoningFormat


@dataclass(frozen=True)
class PrefilledFormat(ReasoningFormat):
    """A format whose output starts in reasoning whenever thinking is on
    (its template writes the start marker, or its model always thinks
    first): without a request's switch, it starts in reasoning if thinking
    is on by default. A start marker the model writes itself is dropped."""

    @property
    def default_force(self) -> bool:
        return self.always_thinking or self.thinking_by_default


register(
    ReasoningFormat(
        name="granite",
        models="IBM Granite 3.2 / 3.3 Instruct (thinking on with `thinking: true`)",
        start="Here is my thought process:",
        other_starts=("Here's my thought process:",),
        end="Here is my response:",
        other_ends=("Here's my response:",),
        start_required=True,
        end_of_turn=("<|end_of_text|>",),
    )
)
register(
    replace(
        QWEN3,
        name="ernie45",
        models="Baidu ERNIE-4.5-21B-A3B-Thinking",
        always_thinking=True,
        answer_markers=("<response>", "</response>"),
        end_of_turn=("</s>",),
    )
)
register(
    replace(
        QWEN3,
        name="hunyuan_a13b",
        models="Tencent Hunyuan-A13B-Instruct",
        tool_start="<tool_calls>",
        # The model writes <think> itself: an answer without it is content.
        thinking_switches=(),
        thinking_by_default=False,
        answer_markers=("<answer>", "</answer>"),
        end_of_turn=("<|eos|>",),
    )
)
_PREFILLED = PrefilledFormat(
    name="holo2",
    models="H Company Holo2 (Qwen3-VL based); off with `thinking: false`",
    tool_start="<tool_call>",
    thinking_switches=("thinking", "enable_thinking"),
    end_of_turn=("<|im_end|>",),
)
register(_PREFILLED)
register(replace(_PREFILLED, name="olmo3", models="AllenAI OLMo 3 Think", tool_start="<function_calls>"))
_OFF_BY_DEFAULT = replace(QWEN3, tool_start=None, thinking_by_default=False, end_of_turn=())
register(replace(_OFF_BY_DEFAULT, name="exaone4", models="LG EXAONE 4.0; on only with `enable_thinking: true`"))
register(replace(_OFF_BY_DEFAULT, name="rwkv", models="RWKV; on with `enable_thinking: true` or a `<think>`"))
register(
    PrefilledFormat(
        name="gigachat35",
        models="GigaChat 3.5; on only with `reasoning: true`",
        thinking_switches=("reasoning",),
        thinking_by_default=False,
    )
)
register(
    PrefilledFormat(
        name="plamo3",
        models="Preferred Networks PLaMo 3; off with `enable_thinking: false`",
        start="<|plamo:begin_think:plamo|>",
        end="<|plamo:end_think:plamo|>",
        end_of_turn=("<|plamo:tag|>",),
    )
)
# Seed-OSS thinks unless `thinking_budget` is 0: its chat template then writes
# the whole think block into the prompt, `<seed:think>…</seed:think>`, and the
# model answers (or calls) at once (chat_template.jinja of
# https://huggingface.co/ByteDance-Seed/Seed-OSS-36B-Instruct). Any other
# budget, -1 (unlimited, the default) included, leaves the thinking to the model.
register(
    PrefilledFormat(
        name="seed_oss",
        models="ByteDance Seed-OSS-36B; off with `thinking_budget: 0`",
        start="<seed:think>",
        end="</seed:think>",
        thinking_switches=("thinking_budget",),
        switch_off_value=0,
        end_of_turn=("<seed:eos>",),
    )
)
