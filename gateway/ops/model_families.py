"""Which parsers a model needs, from its name: the pattern table used for
model entries that name no parsers (and for `parsegate parsers --for`).

Patterns are shell-style (`*`, `?`), matched case-insensitively against the
last path segment of the backend model name (`Qwen/Qwen3-8B` -> `qwen3-8b`);
the first matching family wins, so narrower patterns come first.

A family gets a reasoning parser only if its models write reasoning, and
one whose start follows what the template opens: a model that does not
reason (Qwen3-Coder, Qwen3 *-Instruct-2507, Kimi-K2-Instruct) would have
the text before its calls read as reasoning. Where a family has checkpoints
of both kinds under one pattern, the narrower pattern comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True, slots=True)
class ModelFamily:
    patterns: tuple[str, ...]
    tool_call_parser: str | None
    reasoning_parser: str | None


FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily(("qwen3-coder*",), "qwen3_coder", None),
    ModelFamily(("qwen3.5*", "qwen3.6*"), "qwen3_coder", "qwen3"),
    ModelFamily(("qwen3-*thinking*",), "qwen25", "qwen3-thinking"),
    ModelFamily(("qwen3-*instruct*",), "qwen25", None),
    ModelFamily(("qwen3*", "qwq*"), "qwen25", "qwen3"),
    ModelFamily(("qwen2.5*",), "qwen25", None),
    ModelFamily(("deepseek-r1-distill*",), None, "deepseek-r1"),
    ModelFamily(("deepseek-r1*",), "deepseekv3", "deepseek-r1"),
    ModelFamily(("deepseek-v3.1*", "deepseek-v3.2-exp*"), "deepseekv31", "deepseek-v3"),
    ModelFamily(("deepseek-v3.2*",), "deepseekv32", "deepseek-v3"),
    ModelFamily(("deepseek-v3*",), "deepseekv3", None),
    ModelFamily(("deepseek-v4.1*",), "deepseekv41", "deepseek-v41"),
    ModelFamily(("deepseek-v4*",), "deepseekv4", "deepseek-v4"),
    ModelFamily(("kimi-k2-thinking*", "kimi-k2.*"), "kimi_k2", "kimi_k2"),
    ModelFamily(("kimi-k2*",), "kimi_k2", None),
    ModelFamily(("kimi-k3*",), "kimi_k3", "kimi_k3"),
    ModelFamily(("k2-horizon*",), "k2_horizon", "k2_horizon"),
    ModelFamily(("inkling*",), "inkling", "inkling"),
    ModelFamily(("glm-4.5*", "glm-4.6*"), "glm45", "glm45"),
    ModelFamily(("glm-4.7*", "glm-5*"), "glm47", "glm45"),
    ModelFamily(("minimax-m3*",), "minimax-m3", "minimax-m3"),
    ModelFamily(("minimax-m2*",), "minimax-m2", "minimax"),
    ModelFamily(("gpt-oss*",), "gpt-oss", "gpt-oss"),
    ModelFamily(("llama-4*",), "pythonic", None),
    ModelFamily(("*firefunction-v2*",), "firefunction_v2", None),  # before llama-3*: llama-3-firefunction-v2
    ModelFamily(("llama-3*", "meta-llama-3*"), "llama3", None),
    ModelFamily(("magistral*", "ministral-3*reasoning*", "mistral-small-4*"), "mistral", "mistral"),
    ModelFamily(("mistral*", "mixtral*", "ministral*", "devstral*", "codestral*"), "mistral", None),
    ModelFamily(("gemma-4*",), "gemma4", "gemma4"),
    ModelFamily(("lfm2*",), "lfm2", "lfm2"),
    ModelFamily(("hermes-2-pro*", "hermes-3*", "hermes-4*"), "hermes", None),
    ModelFamily(("intern-s1*",), "interns1", "interns1"),
    ModelFamily(("internlm*",), "internlm", None),
    ModelFamily(("dots.llm*",), "dots", None),
    ModelFamily(("gigachat3.5*",), "gigachat35", "gigachat35"),
    ModelFamily(("gigachat3*",), "gigachat3", None),
    ModelFamily(("hy3*", "hy4*"), "hunyuan", "hunyuan"),
    ModelFamily(("apertus*2509*",), "apertus2509", "apertus2509"),
    ModelFamily(("command-a-reasoning*",), "cohere_command4", "cohere_command4"),
    # Formats only the peers parse (docs/peer-formats.md).
    ModelFamily(("granite-20b-functioncalling*",), "granite-20b-fc", None),
    ModelFamily(("granite-3*",), "granite", "granite"),
    ModelFamily(("granite-4*",), "granite4", None),
    ModelFamily(("ai21-jamba*", "jamba*"), "jamba", None),
    ModelFamily(("llama-xlam*", "xlam*"), "xlam", None),
    ModelFamily(("phi-4-mini*",), "phi4_mini_json", None),
    ModelFamily(("hunyuan-a13b*",), "hunyuan_a13b", "hunyuan_a13b"),
    ModelFamily(("longcat-flash*",), "longcat", None),
    ModelFamily(("olmo-3*think*",), "olmo3", "olmo3"),
    ModelFamily(("olmo-3*",), "olmo3", None),
    ModelFamily(("ernie-4.5*thinking*",), "ernie45", "ernie45"),
    ModelFamily(("ernie-4.5*",), "ernie45", None),
    ModelFamily(("seed-oss*",), "seed_oss", "seed_oss"),
    ModelFamily(("minimax-m1*",), "minimax", "minimax"),
    ModelFamily(("holo2*",), None, "holo2"),
    ModelFamily(("apriel-1.5*",), "apriel", "apriel"),
    ModelFamily(("apriel-1.6*",), "apriel", None),
    ModelFamily(("c4ai-command-r7b*", "command-r7b*"), "command_r7b", "command_r7b"),
    ModelFamily(("c4ai-command-r-plus*", "command-r-plus*"), "command_r_plus", None),
    ModelFamily(("functionary-*-v3.1*",), "functionary_v3_1", None),
    ModelFamily(("functionary-*-v3.2*",), "functionary_v3_2", None),
    ModelFamily(("nvidia-nemotron-nano-*-v2*",), "nemotron_nano_v2", "nemotron_nano_v2"),
)


def family_of(model: str) -> tuple[str, ModelFamily] | None:
    """The first family whose pattern matches `model`, with that pattern."""
    name = model.rstrip("/").rsplit("/", 1)[-1].lower()
    for family in FAMILIES:
        for pattern in family.patterns:
            if fnmatchcase(name, pattern):
                return pattern, family
    return None
