"""The `<think>…</think>` reasoning family (docs/parsers.md).

Wire format: `<think>reasoning</think>answer`. Models whose template
prefills `<think>` emit only `reasoning</think>answer`; those are
`always_thinking`. A format with a `tool_start` also ends reasoning at a
tool-call marker written before `</think>`; one `ended_by_tool_calls` at
the opening marker of the tool-call format it is served with (Kimi K2
Thinking and DeepSeek R1 start calling tools without closing their
thought).
"""

from dataclasses import replace

from parsers.formats.table import register
from parsers.stages.reasoning import ReasoningFormat

QWEN3 = ReasoningFormat(
    name="qwen3",
    models="Qwen3 (hybrid thinking), QwQ; `enable_thinking` switches it",
    tool_start="<tool_call>",
    end_of_turn=("<|im_end|>", "<|endoftext|>"),
)
register(QWEN3)
register(
    replace(
        QWEN3, name="qwen3-thinking", models="Qwen3 *-Thinking-2507 (template prefills <think>)", always_thinking=True
    )
)
register(replace(QWEN3, name="minimax", models="MiniMax M1/M2 (reasoning always on)", always_thinking=True))
register(replace(QWEN3, name="interns1", models="InternLM / Intern-S1"))
register(replace(QWEN3, name="nano_v3", models="NVIDIA Nemotron 3 Nano"))
register(replace(QWEN3, name="glm45", models="GLM-4.5 / 4.6 / 4.7, GLM-5"), "glm47")
register(replace(QWEN3, name="ling3", models="inclusionAI Ling 3 / Ring 3"))
register(replace(QWEN3, name="dots", models="rednote dots.llm1"))
register(replace(QWEN3, name="nanbeige", models="Nanbeige 4"))
register(replace(QWEN3, name="nemotron_3", models="NVIDIA Nemotron 3 (Super / Ultra)"))
register(
    replace(
        QWEN3,
        name="granite_thinking_parser",
        models="IBM Granite thinking models; the newline after </think> is not content",
        drops_newline_after_end=True,
    ),
    "granite_thinking",
)
register(
    replace(
        QWEN3,
        name="mimo",
        models="Xiaomi MiMo; on only with `enable_thinking: true`",
        thinking_by_default=False,
    )
)
register(
    replace(
        QWEN3,
        name="poolside_v1",
        models="Poolside Laguna; on only with `enable_thinking: true`",
        thinking_by_default=False,
    )
)
register(
    replace(
        QWEN3,
        name="iquest_q1",
        models="IQuest Q1; off when `thinking` / `enable_thinking` say false",
        tool_start=None,
        thinking_switches=("thinking", "enable_thinking"),
    )
)
DEEPSEEK_V3 = replace(
    QWEN3,
    name="deepseek-v3",
    models="DeepSeek V3.1 / V3.2 hybrid; on only with `thinking: true` (or `enable_thinking`)",
    thinking_switches=("thinking", "enable_thinking"),
    thinking_by_default=False,
    end_of_turn=("<｜end▁of▁sentence｜>",),
    ended_by_tool_calls=True,
)
register(DEEPSEEK_V3)
register(
    replace(
        DEEPSEEK_V3,
        name="deepseek-v4",
        models="DeepSeek V4; on only with `thinking: true` (or `enable_thinking`)",
        tool_start="<｜DSML｜tool_calls>",
        reenters=True,
    )
)
register(
    replace(
        DEEPSEEK_V3,
        name="deepseek-v41",
        models="DeepSeek V4.1; on only with `thinking: true` (or `enable_thinking`)",
        tool_start="<｜DSML｜ calls>",
        reenters=True,
    )
)
register(
    replace(
        QWEN3,
        name="kimi_k2",
        models="Kimi K2 Thinking / K2.5; off with `thinking: false`",
        tool_start="<|tool_calls_section_begin|>",
        thinking_switches=("thinking",),
        ended_by_tool_calls=True,
    )
)

_ALWAYS = ReasoningFormat(
    name="deepseek-r1",
    models="DeepSeek-R1 and R1 distills",
    always_thinking=True,
    end_of_turn=("<｜end▁of▁sentence｜>",),
)
register(replace(_ALWAYS, ended_by_tool_calls=True))
register(replace(_ALWAYS, name="step3", models="StepFun Step-3"))
register(
    replace(
        _ALWAYS,
        name="step3p5",
        models="StepFun Step-3.5; the newlines it writes around </think> are not text",
        other_ends=("\n</think>",),
        drops_newline_after_end=True,
    )
)

register(
    ReasoningFormat(
        name="mistral",
        models="Magistral, Mistral Small 4 reasoning ([THINK] … [/THINK]); on when `reasoning_effort` is set and not `none`",
        start="[THINK]",
        end="[/THINK]",
        thinking_switches=("thinking", "enable_thinking"),
        thinking_by_default=False,
        needs_special_tokens=True,
        end_of_turn=("</s>",),
    )
)
register(
    ReasoningFormat(
        name="gemma4",
        models="Google Gemma 4 (<|channel>thought\n … <channel|>); on only with `enable_thinking: true`",
        start="<|channel>",
        end="<channel|>",
        start_label="thought\n",
        tool_start="<|tool_call>",
        thinking_by_default=False,
        needs_special_tokens=True,
    )
)

register(
    ReasoningFormat(
        name="kimi",
        models="Kimi 1.5 / Kimi-VL thinking (◁think▷ … ◁/think▷)",
        start="◁think▷",
        end="◁/think▷",
        start_required=True,
        ended_by_tool_calls=True,
    )
)
register(
    replace(
        QWEN3,
        name="lfm2",
        models="Liquid LFM2 / LFM2.5 (thinking checkpoints write <think> themselves)",
        tool_start="<|tool_call_start|>",
        # The template never opens <think> (LFM2.5-8B-A1B writes it before its
        # calls; the instruct checkpoints do not write it): reasoning only from
        # the model's own <think> (llama.cpp models/templates/LFM2.5-8B-A1B.jinja).
        thinking_switches=(),
        thinking_by_default=False,
    )
)
register(
    replace(
        QWEN3,
        name="minimax-append-think",
        models="MiniMax M1 / M2, keeping <think>…</think> in content for clients that split it",
        separates=False,
        tool_start=None,
    ),
    "minimax_m2_append_think",
)
