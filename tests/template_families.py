"""The real chat templates in tests/fixtures/chat_templates, each with the
parsers its family is named to (`gateway/ops/model_families.py`'s pairing,
or the parser the cases of that family name), for the recognition tests
and the derivation report (`python -m tests.derivation_report`)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from gateway.templates.derivation import Derivation
from parsers import reasoning_format, tool_format
from tests.corpus import load_cases as _load_cases

TEMPLATES = Path(__file__).parent / "fixtures" / "chat_templates"

# template file -> (family, tool-call parser, reasoning parser)
FAMILY_TEMPLATES: dict[str, tuple[str, str | None, str | None]] = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("Qwen 2.5", "qwen25", None),
    "Qwen-Qwen3-0.6B.jinja": ("Qwen 3", "qwen25", "qwen3"),
    "Qwen-QwQ-32B.jinja": ("QwQ", "qwen25", "qwen3"),
    "Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja": ("Qwen3-Coder", "qwen3_coder", None),
    "Qwen3.5-4B.jinja": ("Qwen 3.5", "qwen3_coder", "qwen3"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("Hermes 2 Pro", "hermes", None),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("Hermes 3", "hermes", None),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ("DeepSeek R1 distill (Qwen)", "deepseekv3", "deepseek-r1"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("DeepSeek R1 distill (Llama)", "deepseekv3", "deepseek-r1"),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("DeepSeek V3.1", "deepseekv31", "deepseek-v3"),
    "deepseek-ai-DeepSeek-V3.2.jinja": ("DeepSeek V3.2", "deepseekv32", "deepseek-v3"),
    "zai-org-GLM-4.6.jinja": ("GLM 4.6", "glm45", "glm45"),
    "GLM-4.7-Flash.jinja": ("GLM 4.7", "glm47", "glm45"),
    "moonshotai-Kimi-K2-Instruct.jinja": ("Kimi K2", "kimi_k2", None),
    "Kimi-K2-Thinking.jinja": ("Kimi K2 Thinking", "kimi_k2", "kimi_k2"),
    "MiniMax-M2.jinja": ("MiniMax M2", "minimax-m2", "minimax"),
    "ByteDance-Seed-OSS.jinja": ("Seed-OSS", "seed_oss", "seed_oss"),
    "openai-gpt-oss-120b.jinja": ("gpt-oss", "gpt-oss", "gpt-oss"),
    "google-gemma-4-31B-it.jinja": ("Gemma 4", "gemma4", "gemma4"),
    "google-gemma-4-31B-it-interleaved.jinja": ("Gemma 4 (interleaved)", "gemma4", "gemma4"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("Command R7B", "command_r7b", "command_r7b"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ("Command R+", "command_r_plus", None),
    "LFM2-8B-A1B.jinja": ("LFM2", "lfm2", None),
    "LFM2.5-Instruct.jinja": ("LFM2.5", "lfm2", None),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("Llama 3.1", "llama3", None),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("Llama 3.2", "llama3", None),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": ("Llama 3.3", "llama3", None),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("Mistral Nemo", "mistral", None),
    "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja": ("Mistral Small 3.2", "mistral", None),
    "unsloth-mistral-Devstral-Small-2507.jinja": ("Devstral Small", "mistral", None),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("Ministral 3 Reasoning", "mistral", "mistral"),
    "meetkai-functionary-medium-v3.1.jinja": ("functionary v3.1", "functionary_v3_1", None),
    "meetkai-functionary-medium-v3.2.jinja": ("functionary v3.2", "functionary_v3_2", None),
    "fireworks-ai-llama-3-firefunction-v2.jinja": ("FireFunction v2", "firefunction_v2", None),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("Granite 3.3", "granite", "granite"),
    "ibm-granite-granite-4.0.jinja": ("Granite 4.0", "granite4", None),
    "unsloth-Apriel-1.5.jinja": ("Apriel 1.5", "apriel", "apriel"),
    "Apriel-1.6-15b-Thinker-fixed.jinja": ("Apriel 1.6", "apriel", "apriel"),
    "NVIDIA-Nemotron-Nano-v2.jinja": ("Nemotron Nano v2", "nemotron_nano_v2", "nemotron_nano_v2"),
    "Apertus-8B-Instruct.jinja": ("Apertus", "apertus2509", "apertus2509"),
    "GigaChat3-10B-A1.8B.jinja": ("GigaChat 3", "gigachat3", None),
    "stepfun-ai-Step-3.5-Flash.jinja": ("Step 3.5", "step3p5", None),
    "Kimi-K3.jinja": ("Kimi K3", "kimi_k3", "kimi_k3"),
    "MiniMax-M3.jinja": ("MiniMax M3", "minimax-m3", "minimax-m3"),
    "MiniMax-M1.jinja": ("MiniMax M1", "minimax", "minimax"),
    "muse-glimmer.jinja": ("Muse Glimmer", "muse", "muse"),
    "deepseek-ai-DeepSeek-V4.jinja": ("DeepSeek V4", "deepseekv4", "deepseek-v4"),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": ("DeepSeek V4 Flash 0731", "deepseekv4", "deepseek-v4"),
    "tencent-Hy3.jinja": ("Hunyuan Hy3", "hunyuan", "hunyuan"),
    "LFM2.5-8B-A1B.jinja": ("LFM2.5-8B-A1B", "lfm2", "lfm2"),
    "openbmb-MiniCPM5-1B.jinja": ("MiniCPM 5", "minicpm5", "minicpm5"),
    "poolside-Laguna-XS.2.jinja": ("Laguna XS.2", "poolside_v1", "poolside_v1"),
    "poolside-Laguna-S-2.1.jinja": ("Laguna S-2.1", "poolside_v1", "poolside_v1"),
    "ibm-granite-granite-4.1.jinja": ("Granite 4.1", "granite4", None),
    "Cohere2MoE.jinja": ("North Mini Code (Cohere2MoE)", "cohere_command4", "cohere_command4"),
    "GigaChat3.5.jinja": ("GigaChat 3.5", "gigachat35", "gigachat35"),
}

# LFM2's special tokens, as LiquidAI's tokenizer lists them (added_tokens_decoder of
# huggingface.co/LiquidAI/LFM2-1.2B's tokenizer_config.json, ids 6-13): its templates
# write the tool list but leave the call markers to the model.
LFM2_TOKENS = (
    "<|im_start|>",
    "<|im_end|>",
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|tool_response_start|>",
    "<|tool_response_end|>",
)
SPECIAL_TOKENS = {"LFM2-8B-A1B.jinja": LFM2_TOKENS, "LFM2.5-Instruct.jinja": LFM2_TOKENS}


@cache
def load_cases() -> tuple[dict, ...]:
    return tuple(_load_cases())


def cases_for(tool: str | None, reasoning: str | None) -> list[dict]:
    """The cases of the named formats (tests/cases and the corpus): each
    case's parsers are these (any alias), or it names only one stage and
    that one is."""

    def same(case_name, named, lookup):
        return case_name is None or (named is not None and lookup(case_name) is lookup(named))

    return [
        case
        for case in load_cases()
        if (case["tool_parser"] or case["reasoning_parser"])
        and _known(case)
        and same(case["tool_parser"], tool, tool_format)
        and same(case["reasoning_parser"], reasoning, reasoning_format)
    ]


def _known(case: dict) -> bool:
    try:
        case["tool_parser"] and tool_format(case["tool_parser"])
        case["reasoning_parser"] and reasoning_format(case["reasoning_parser"])
    except KeyError:
        return False
    return True


def stages(found: Derivation, case: dict) -> tuple:
    """The template's stages the case exercises (a tool-only case: no reasoning)."""
    return (found.reasoning_stage() if case["reasoning_parser"] else None), (
        found.tool_stage() if case["tool_parser"] else None
    )


# What a fine-tune's copy of a template changes (item: "renamed twins"):
# its own default system prompt, the date it prints, loop variables
# renamed, and the spacing inside the template's tags.
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w* 20\d\d\b")
_SYSTEM_PROMPT = re.compile(r"(['\"])(You are [^'\"]{4,}?)\1")
_PROSE = re.compile(r"'([A-Z][A-Za-z ,.]{23,})'|\"([A-Z][A-Za-z ,.]{23,})\"")  # an instruction the template prints
_LOOP = re.compile(r"\{%-?\s*for\s+(\w+)(?:\s*,\s*(\w+))?\s+in\b")
_BLOCK = re.compile(r"\{[{%].*?[%}]\}", re.DOTALL)
_STRING = re.compile(r"('[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\")")
_DEFAULT_SYSTEM = (
    "{%- if messages[0]['role'] != 'system' -%}"
    "{%- set messages = [{'role': 'system', 'content': 'You are Acme Helper, tuned by Acme Labs.'}] + messages -%}"
    "{%- endif -%}"
)
_GLOBALS = {"messages", "tools", "loop", "add_generation_prompt", "bos_token", "eos_token"}


def fine_tuned(source: str) -> str:
    """`source` as a fine-tune's copy of it: another default system prompt,
    another date, its loop variables renamed and its tags spaced otherwise."""
    source = _DATE.sub("2027-03-14", source)
    source = _SYSTEM_PROMPT.sub(lambda m: m[1] + "You are Acme Helper, tuned by Acme Labs. " + m[2] + m[1], source)
    source = _PROSE.sub(lambda m: m[0][0] + (m[1] or m[2]) + " Acme Labs tuned this." + m[0][0], source)
    if "Acme" not in source:  # no system prompt of its own: the fine-tune adds one
        source = _DEFAULT_SYSTEM + source
    names = {name for match in _LOOP.finditer(source) for name in match.groups() if name} - _GLOBALS
    for name in sorted(names):
        word = re.compile(rf"(?<![\w.]){name}\b")
        source = _BLOCK.sub(
            lambda block, word=word, name=name: "".join(
                part if _STRING.fullmatch(part) else word.sub(f"tuned_{name}", part)
                for part in _STRING.split(block.group())
            ),
            source,
        )
    return source.replace("{%- ", "{%-  ").replace(" -%}", "  -%}")
