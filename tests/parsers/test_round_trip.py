"""The round trip (issue 43, tests/round_trip.py): every real chat template
in tests/fixtures/chat_templates writes the last assistant turn of every
conversation shape, and parsegate, with the parsers documented for the
model, parses that text back to the calls, arguments, reasoning and
content that went in: whole, one character at a time, and at random
splits, all the same.

`MODELS` states each fixture's model and parsers. `CANNOT_WRITE` states
which shapes a template cannot write, and why; the test checks each entry
(the turn indeed does not render as written, `round_trip.assistant_turn`),
so the table cannot claim a shape the template writes. Every other shape
must round-trip: there are no exceptions for parser defects.

`python -m tests.round_trip_report` prints the same per template, with the
first difference of each failure.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.ops.model_families import family_of
from tests.round_trip import FIXTURES, SHAPE_NAMES, Model, Turn, assistant_turn, difference, model_shapes, parse

DEEPSEEK = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")
LLAMA = ("<|begin_of_text|>", "<|eot_id|>")
MISTRAL = ("<s>", "</s>")
CHATML = (None, "<|im_end|>")
COHERE = ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>")
THINKING_OFF = {"enable_thinking": False}

# file -> the model, its parsers (docs/parsers.md), BOS and EOS texts, and
# the template switches a request sets (Model's docstring).
# Without `enable_thinking` Gemma 4's prompt ends in an empty thought channel
# that the template never writes into history.
GEMMA4 = Model(
    "google/gemma-4-31B-it",
    "gemma4",
    "gemma4",
    "<bos>",
    "<turn|>",
    thinking={"enable_thinking": True},
    no_thinking={"enable_thinking": True},
)

MODELS: dict[str, Model] = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": Model("Qwen/Qwen2.5-7B-Instruct", "qwen25", None, *CHATML),
    "Qwen-Qwen3-0.6B.jinja": Model("Qwen/Qwen3-0.6B", "qwen25", "qwen3", *CHATML),
    "Qwen-QwQ-32B.jinja": Model("Qwen/QwQ-32B", "qwen25", "qwen3", *CHATML),
    # Qwen3-Coder Instruct does not think: its template writes no reasoning.
    "Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja": Model("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder", None, *CHATML),
    "Qwen3.5-4B.jinja": Model("Qwen/Qwen3.5-4B", "qwen3_coder", "qwen3", *CHATML),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": Model("meta-llama/Llama-3.1-8B-Instruct", "llama3", None, *LLAMA),
    "fireworks-ai-llama-3-firefunction-v2.jinja": Model(
        "fireworks-ai/llama-3-firefunction-v2", "firefunction_v2", None, *LLAMA
    ),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": Model("meta-llama/Llama-3.2-3B-Instruct", "llama3", None, *LLAMA),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": Model("meta-llama/Llama-3.3-70B-Instruct", "llama3", None, *LLAMA),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": Model(
        "mistralai/Mistral-Nemo-Instruct-2407", "mistral", None, *MISTRAL
    ),
    "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja": Model(
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral", None, *MISTRAL
    ),
    "unsloth-mistral-Devstral-Small-2507.jinja": Model("mistralai/Devstral-Small-2507", "mistral", None, *MISTRAL),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": Model(
        "mistralai/Ministral-3-14B-Reasoning-2512", "mistral", "mistral", *MISTRAL
    ),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": Model(
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", None, "deepseek-r1", *DEEPSEEK
    ),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": Model(
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", None, "deepseek-r1", *DEEPSEEK
    ),
    "deepseek-ai-DeepSeek-V3.1.jinja": Model(
        "deepseek-ai/DeepSeek-V3.1", "deepseekv31", "deepseek-v3", *DEEPSEEK, thinking={"thinking": True}
    ),
    "deepseek-ai-DeepSeek-V3.2.jinja": Model(
        "deepseek-ai/DeepSeek-V3.2", "deepseekv32", "deepseek-v3", *DEEPSEEK, thinking={"thinking": True}
    ),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": Model(
        "NousResearch/Hermes-3-Llama-3.1-8B", "hermes", None, "<|begin_of_text|>", "<|im_end|>"
    ),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": Model(
        "NousResearch/Hermes-2-Pro-Llama-3-8B", "hermes", None, "<|begin_of_text|>", "<|im_end|>"
    ),
    "zai-org-GLM-4.6.jinja": Model("zai-org/GLM-4.6", "glm45", "glm45", None, "<|endoftext|>"),
    "GLM-4.7-Flash.jinja": Model(
        "zai-org/GLM-4.7-Flash", "glm47", "glm45", None, "<|endoftext|>", no_thinking=THINKING_OFF
    ),
    "openai-gpt-oss-120b.jinja": Model(
        "openai/gpt-oss-120b",
        "gpt-oss",
        "gpt-oss",
        "<|startoftext|>",
        "<|return|>",
        reasoning_block=("<|channel|>analysis<|message|>", "<|end|>"),
    ),
    "google-gemma-2-2b-it.jinja": Model("google/gemma-2-2b-it", None, None, "<bos>", "<eos>"),
    "google-gemma-4-31B-it.jinja": GEMMA4,
    "google-gemma-4-31B-it-interleaved.jinja": GEMMA4,
    "microsoft-Phi-3.5-mini-instruct.jinja": Model(
        "microsoft/Phi-3.5-mini-instruct", None, None, "<s>", "<|endoftext|>"
    ),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": Model(
        "ibm-granite/granite-3.3-2b-instruct", "granite", "granite", "<|end_of_text|>", "<|end_of_text|>"
    ),
    "ibm-granite-granite-4.0.jinja": Model(
        "ibm-granite/granite-4.0-h-small", "granite4", None, None, "<|end_of_text|>"
    ),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": Model(
        "CohereForAI/c4ai-command-r-plus", "command_r_plus", None, *COHERE
    ),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": Model(
        "CohereForAI/c4ai-command-r7b-12-2024", "command_r7b", "command_r7b", *COHERE
    ),
    "meetkai-functionary-medium-v3.1.jinja": Model("meetkai/functionary-medium-v3.1", "functionary_v3_1", None, *LLAMA),
    "meetkai-functionary-medium-v3.2.jinja": Model("meetkai/functionary-medium-v3.2", "functionary_v3_2", None, *LLAMA),
    # Kimi K2 Instruct does not think: its template writes no reasoning.
    "moonshotai-Kimi-K2-Instruct.jinja": Model("moonshotai/Kimi-K2-Instruct", "kimi_k2", None, "[BOS]", "[EOS]"),
    # llama.cpp's edit of Moonshot's template (SOURCES.md).
    "Kimi-K2-Thinking.jinja": Model("moonshotai/Kimi-K2-Thinking", "kimi_k2", "kimi_k2", "[BOS]", "[EOS]"),
    "moonshotai-Kimi-K2-Thinking.jinja": Model("moonshotai/Kimi-K2-Thinking", "kimi_k2", "kimi_k2", "[BOS]", "[EOS]"),
    "MiniMax-M2.jinja": Model("MiniMaxAI/MiniMax-M2", "minimax-m2", "minimax", "]~!b[", "[e~["),
    # Seed-OSS thinks unless its budget is 0 (its template's switch): a turn without reasoning is one
    # written with `thinking_budget: 0`.
    "ByteDance-Seed-OSS.jinja": Model(
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
        "seed_oss",
        "seed_oss",
        "<seed:bos>",
        "<seed:eos>",
        no_thinking={"thinking_budget": 0},
    ),
    "unsloth-Apriel-1.5.jinja": Model("ServiceNow-AI/Apriel-1.5-15b-Thinker", "apriel", "apriel", "<s>", "<|end|>"),
    "Apriel-1.6-15b-Thinker-fixed.jinja": Model(
        "ServiceNow-AI/Apriel-1.6-15b-Thinker", "apriel", None, "<s>", "<|end|>"
    ),
    "LFM2-8B-A1B.jinja": Model("LiquidAI/LFM2-8B-A1B", "lfm2", "lfm2", "<|startoftext|>", "<|im_end|>"),
    "LFM2.5-Instruct.jinja": Model("LiquidAI/LFM2.5-1.2B-Instruct", "lfm2", "lfm2", "<|startoftext|>", "<|im_end|>"),
    # MiMo-VL is Qwen2.5-VL's template: Qwen's JSON calls, not the `mimo` format.
    "MiMo-VL.jinja": Model("XiaomiMiMo/MiMo-VL-7B-RL", "qwen25", None, *CHATML),
    "stepfun-ai-Step-3.5-Flash.jinja": Model("stepfun-ai/Step-3.5-Flash", "step3p5", "step3p5", *CHATML),
    "Apertus-8B-Instruct.jinja": Model(
        "swiss-ai/Apertus-8B-Instruct-2509", "apertus2509", "apertus2509", "<s>", "<|assistant_end|>"
    ),
    "GigaChat3-10B-A1.8B.jinja": Model("ai-sage/GigaChat3-10B-A1.8B", "gigachat3", None, *MISTRAL),
    "NVIDIA-Nemotron-Nano-v2.jinja": Model(
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nemotron_nano_v2", "nemotron_nano_v2", None, "<SPECIAL_12>"
    ),
    "GigaChat3.1-10B-A1.8B.jinja": Model("ai-sage/GigaChat3.1-10B-A1.8B", "gigachat3", None, *MISTRAL),
    "vllm-llama4-pythonic.jinja": Model(
        "meta-llama/Llama-4-Scout-17B-16E-Instruct", "pythonic", None, "<|begin_of_text|>", "<|eot|>"
    ),
    "vllm-olmo3.jinja": Model("allenai/Olmo-3-7B-Instruct", "olmo3", None, *CHATML),
    "vllm-xlam-llama.jinja": Model("Salesforce/Llama-xLAM-2-8b-fc-r", "xlam", None, *LLAMA),
    # Nemotron 3 Nano writes Qwen3-Coder's calls (docs/parsers.md `nano_v3`).
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": Model(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3_coder", "nano_v3", *CHATML, no_thinking=THINKING_OFF
    ),
    "Kimi-K3.jinja": Model(
        "moonshotai/Kimi-K3", "kimi_k3", "kimi_k3", None, "<|end_of_msg|>", no_thinking={"thinking": False}
    ),
    "MiniMax-M3.jinja": Model(
        "MiniMaxAI/MiniMax-M3", "minimax-m3", "minimax-m3", "]~b]", "[e~[", thinking={"thinking_mode": "enabled"}
    ),
    # MiniMax M1 always reasons: it opens its turn with `<think>` itself.
    "MiniMax-M1.jinja": Model(
        "MiniMaxAI/MiniMax-M1-80k", "minimax", "minimax", None, "<end_of_sentence>", always_opens="<think>"
    ),
    "muse-glimmer.jinja": Model("muse/Muse-Glimmer", "muse", "muse", None, "<|eot|>"),
    "deepseek-ai-DeepSeek-V4.jinja": Model(
        "deepseek-ai/DeepSeek-V4-Flash", "deepseekv4", "deepseek-v4", *DEEPSEEK, thinking={"thinking": True}
    ),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": Model(
        "deepseek-ai/DeepSeek-V4-Flash-0731", "deepseekv4", "deepseek-v4", *DEEPSEEK, thinking={"thinking": True}
    ),
    "tencent-Hy3.jinja": Model(
        "tencent/Hy3-preview",
        "hunyuan",
        "hunyuan",
        "<｜hy_begin_of_sentence:opensource｜>",
        "<｜hy_eos:opensource｜>",
        thinking={"reasoning_effort": "high"},
        no_thinking={"reasoning_effort": "no_think"},
    ),
    "LFM2.5-8B-A1B.jinja": Model("LiquidAI/LFM2.5-8B-A1B", "lfm2", "lfm2", "<|startoftext|>", "<|im_end|>"),
    "openbmb-MiniCPM5-1B.jinja": Model(
        "openbmb/MiniCPM5-1B", "minicpm5", "minicpm5", "<s>", "<|im_end|>", thinking={"enable_thinking": True}
    ),
    "poolside-Laguna-XS.2.jinja": Model(
        "poolside/Laguna-XS.2",
        "poolside_v1",
        "poolside_v1",
        "〈|EOS|〉",
        "</assistant>",
        thinking={"enable_thinking": True},
    ),
    "poolside-Laguna-S-2.1.jinja": Model(
        "poolside/Laguna-S-2.1",
        "poolside_v1",
        "poolside_v1",
        "〈|EOS|〉",
        "</assistant>",
        thinking={"enable_thinking": True},
        no_thinking=THINKING_OFF,
    ),
    "ibm-granite-granite-4.1.jinja": Model("ibm-granite/granite-4.1-8b", "granite4", None, None, "<|end_of_text|>"),
    # Cohere's North Mini Code, which llama.cpp names by its architecture only; Command 4's markers.
    "Cohere2MoE.jinja": Model(
        "Cohere2MoE (North Mini Code)", "cohere_command4", "cohere_command4", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"
    ),
    "GigaChat3.5.jinja": Model(
        "ai-sage/GigaChat3.5", "gigachat35", "gigachat35", "<s>", "</s>", thinking={"reasoning": True}
    ),
}

REASONING = ("reasoning_then_call", "reasoning_content_call")
WITH_CONTENT = ("content_then_call", "reasoning_content_call")
WITHOUT_REASONING = tuple(name for name in SHAPE_NAMES if name not in REASONING)
EVERY = SHAPE_NAMES

# Why a template writes no reasoning, no content beside calls, one call only,
# or no calls at all; checked by `test_a_template_cannot_write_what_the_table_says`.
NO_REASONING = "it drops a turn's reasoning"
NO_CONTENT = "it drops a turn's content when the turn has calls"
ONE_CALL = "it writes one call per turn"
NO_CALLS = "it writes no tool calls"
THINKS_ALWAYS = (
    "its generation prompt opens a reasoning block that it never writes into history for a turn without reasoning"
)
REWRITES = "its generation prompt ends in text that history does not write before the turn"
UNESCAPED = "it writes a string argument between quotes as it is, its backslashes unescaped"
QUOTES_EVERY_VALUE = 'it writes every argument as a quoted string (`days="3"`)'

CANNOT_WRITE: dict[str, dict[tuple[str, ...], str]] = {
    # llama.cpp's copy, older than Hugging Face's: for a zero budget its prompt leaves
    # `<seed:think><seed:cot_budget_reflect>` open, which history never writes.
    "ByteDance-Seed-OSS.jinja": {WITHOUT_REASONING: REWRITES},
    "Qwen-Qwen2.5-7B-Instruct.jinja": {REASONING: NO_REASONING},
    "Qwen-QwQ-32B.jinja": {EVERY: "the prompt opens `<think>`; history keeps only what follows `</think>`"},
    "Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja": {REASONING: NO_REASONING},
    "meta-llama-Llama-3.1-8B-Instruct.jinja": {
        REASONING: NO_REASONING,
        WITH_CONTENT: NO_CONTENT,
        ("two_calls",): ONE_CALL,
    },
    "meta-llama-Llama-3.2-3B-Instruct.jinja": {
        REASONING: NO_REASONING,
        WITH_CONTENT: NO_CONTENT,
        ("two_calls",): ONE_CALL,
    },
    "meta-llama-Llama-3.3-70B-Instruct.jinja": {
        REASONING: NO_REASONING,
        WITH_CONTENT: NO_CONTENT,
        ("two_calls",): ONE_CALL,
    },
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": {REASONING: NO_REASONING, WITH_CONTENT: NO_CONTENT},
    "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja": {REASONING: NO_REASONING, WITH_CONTENT: NO_CONTENT},
    "unsloth-mistral-Devstral-Small-2507.jinja": {REASONING: NO_REASONING},
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": {REASONING: NO_REASONING},
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": {
        EVERY: "the prompt opens `<think>`; history drops the reasoning and writes no `<think>`"
    },
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": {
        EVERY: "the prompt opens `<think>`; history drops the reasoning and writes no `<think>`"
    },
    "deepseek-ai-DeepSeek-V3.1.jinja": {REASONING: "with thinking on the prompt opens `<think>`; history drops it"},
    "deepseek-ai-DeepSeek-V3.2.jinja": {
        WITHOUT_REASONING: "with thinking off the prompt ends `<think></think>`; history writes only `</think>`"
    },
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": {REASONING: NO_REASONING, WITH_CONTENT: NO_CONTENT},
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": {REASONING: NO_REASONING, WITH_CONTENT: NO_CONTENT},
    "openai-gpt-oss-120b.jinja": {
        ("two_calls",): ONE_CALL,
        ("content_then_call",): "it writes a calling turn's content in the analysis channel, as reasoning",
        ("reasoning_content_call",): "it raises: a calling turn may have content or thinking, not both",
    },
    "google-gemma-2-2b-it.jinja": {EVERY: NO_CALLS},
    "microsoft-Phi-3.5-mini-instruct.jinja": {EVERY: NO_CALLS},
    "ibm-granite-granite-3.3-2B-Instruct.jinja": {EVERY: NO_CALLS},
    "ibm-granite-granite-4.0.jinja": {REASONING: NO_REASONING},
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": {EVERY: REWRITES + " (its tool-use instructions)"},
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": {REASONING: NO_REASONING, WITH_CONTENT: NO_CONTENT},
    "meetkai-functionary-medium-v3.1.jinja": {REASONING: NO_REASONING},
    "meetkai-functionary-medium-v3.2.jinja": {REASONING: NO_REASONING},
    "moonshotai-Kimi-K2-Instruct.jinja": {REASONING: NO_REASONING},
    "MiniMax-M2.jinja": {WITHOUT_REASONING: THINKS_ALWAYS},
    "unsloth-Apriel-1.5.jinja": {REASONING: NO_REASONING},
    "LFM2-8B-A1B.jinja": {EVERY: NO_CALLS + ", nor reasoning"},
    "Apriel-1.6-15b-Thinker-fixed.jinja": {
        EVERY: "its prompt ends in 'Here are my reasoning steps:', which history does not write"
    },
    "Kimi-K2-Thinking.jinja": {
        EVERY: "it raises: it calls `list.append`, which the sandbox refuses, as transformers' does"
    },
    "fireworks-ai-llama-3-firefunction-v2.jinja": {EVERY: "it raises: it reads a `functions` variable, not `tools`"},
    "LFM2.5-Instruct.jinja": {EVERY: NO_CALLS},
    "MiMo-VL.jinja": {REASONING: NO_REASONING},
    "Apertus-8B-Instruct.jinja": {REASONING: NO_REASONING},
    "GigaChat3-10B-A1.8B.jinja": {REASONING: NO_REASONING, ("two_calls",): ONE_CALL},
    "GigaChat3.1-10B-A1.8B.jinja": {REASONING: NO_REASONING, ("two_calls",): ONE_CALL},
    "vllm-olmo3.jinja": {REASONING: NO_REASONING, ("content_then_call",): NO_CONTENT, ("strings",): UNESCAPED},
    "vllm-llama4-pythonic.jinja": {
        REASONING: NO_REASONING,
        ("strings",): UNESCAPED,
        ("one_call", "nested", "two_calls", "content_then_call"): QUOTES_EVERY_VALUE,
    },
    "vllm-xlam-llama.jinja": {REASONING: NO_REASONING, ("content_then_call",): NO_CONTENT},
    "NVIDIA-Nemotron-Nano-v2.jinja": {
        EVERY: "the prompt opens `<think>` that history does not write; a turn with content drops its calls"
    },
    "MiniMax-M1.jinja": {
        EVERY: "the model opens every turn with `<think>`, which history never writes (nor a calling turn's content)"
    },
    "muse-glimmer.jinja": {WITH_CONTENT: NO_CONTENT},
    "LFM2.5-8B-A1B.jinja": {("strings",): UNESCAPED},
    "ibm-granite-granite-4.1.jinja": {REASONING: NO_REASONING},
    "Cohere2MoE.jinja": {
        WITHOUT_REASONING: "its generation prompt opens `<|START_THINKING|>` (or writes an empty block, with"
        " `reasoning: false`), which history does not write for a turn without reasoning",
        ("reasoning_content_call",): NO_CONTENT,
    },
}


def _cannot_write(file: str, shape: str) -> str | None:
    for shapes, why in CANNOT_WRITE.get(file, {}).items():
        if shape in shapes:
            return why
    return None


PAIRS = [(file, shape) for file in sorted(MODELS) for shape in SHAPE_NAMES]
WRITTEN = [pair for pair in PAIRS if _cannot_write(*pair) is None]
NOT_WRITTEN = [pair for pair in PAIRS if _cannot_write(*pair) is not None]


def _turn(file: str, shape: str) -> tuple[Model, Turn]:
    model = MODELS[file]
    return model, assistant_turn(file, model, model_shapes(file, model)[shape])


def test_every_fixture_has_a_row() -> None:
    assert sorted(path.name for path in FIXTURES.glob("*.jinja")) == sorted(MODELS)
    assert set(CANNOT_WRITE) <= set(MODELS)


@pytest.mark.parametrize("file", sorted(MODELS))
def test_the_parsers_are_those_picked_from_the_model_name(file: str) -> None:
    """Where parsegate picks parsers from the model's name
    (docs/configuration.md), it picks the ones the table states."""
    model = MODELS[file]
    found = family_of(model.model)
    if found is None:
        return  # served only with the parsers named in its model entry
    _, family = found
    assert (family.tool_call_parser, family.reasoning_parser) == (model.tool_call_parser, model.reasoning_parser)


@pytest.mark.parametrize(("file", "shape"), NOT_WRITTEN)
def test_a_template_cannot_write_what_the_table_says(file: str, shape: str) -> None:
    _, turn = _turn(file, shape)
    assert turn.refused is not None, (
        f"{file} writes {shape}: remove it from CANNOT_WRITE ({_cannot_write(file, shape)})"
    )


@pytest.mark.parametrize(("file", "shape"), WRITTEN)
def test_the_written_turn_parses_back(file: str, shape: str) -> None:
    model, turn = _turn(file, shape)
    assert turn.refused is None, f"{file} cannot write {shape} ({turn.refused}): say why in CANNOT_WRITE"
    sent = model_shapes(file, model)[shape]
    whole = parse(model, sent, turn)
    assert difference(whole, sent) is None, f"{turn.text!r}: {difference(whole, sent)}"
    assert parse(model, sent, turn, range(1, len(turn.text))) == whole, "one character at a time"

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.integers(min_value=1, max_value=max(1, len(turn.text) - 1)), max_size=12))
    def streamed_at(cuts: list[int]) -> None:
        assert parse(model, sent, turn, cuts) == whole

    streamed_at()
