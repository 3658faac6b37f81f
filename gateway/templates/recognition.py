"""Families recognised by their distinctive markers (docs/derived-parsers.md).

Before a template's renders are compared (`analysis.py`), its text and
the special tokens its source lists (`tokenizer_config.json`'s
`added_tokens_decoder`, a GGUF's control tokens: `sources.py`) are
searched for markers only one family writes; a family whose markers are
all there names the parsers its models are served by. Where the template
writes tool calls, its calls must still read back through that parser
(`analysis._find_tools`); where it writes none (LFM2.5 writes only the
tool list and leaves `<|tool_call_start|>` to the model), the markers
alone decide. A new revision of the template, or a fine-tune's copy with
another system prompt, keeps its markers, so it is still recognised.

The markers are each family's own, as its chat template or tokenizer
writes them; the sources are named per row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """A family's markers (all present in the template text or its special
    tokens) and the parsers its models are served by."""

    family: str
    markers: tuple[str, ...]
    tool_call_parser: str | None
    reasoning_parser: str | None


@dataclass(frozen=True)
class Recognition:
    """The family a template's markers name, and where each marker was found."""

    signature: Signature
    in_text: tuple[str, ...]
    in_tokens: tuple[str, ...]

    @property
    def evidence(self) -> str:
        """`markers in the template: …; special tokens: …` (`parsegate parsers --derive`)."""
        found = []
        if self.in_text:
            found.append("markers in the template: " + ", ".join(self.in_text))
        if self.in_tokens:
            found.append("special tokens: " + ", ".join(self.in_tokens))
        return f"{self.signature.family} ({'; '.join(found)})"


# Most distinctive first; the first family whose markers are all present wins.
SIGNATURES: tuple[Signature, ...] = (
    # openai/gpt-oss-120b chat_template.jinja: the Harmony format (github.com/openai/harmony)
    Signature("gpt-oss (Harmony)", ("<|channel|>", "<|call|>"), "gpt-oss", "gpt-oss"),
    # google/gemma-4-31B-it chat_template.jinja: `<|tool_call>call:NAME{…}<tool_call|>`, `<|channel>thought`
    Signature("Gemma 4", ("<|tool_call>", "<tool_call|>"), "gemma4", "gemma4"),
    # Cohere Command 4 (Command A Reasoning, North Mini Code: llama.cpp's models/templates/Cohere2MoE.jinja):
    # Command R7B's thinking and action tokens, with `<|START_TEXT|>` where R7B writes `<|START_RESPONSE|>`
    Signature(
        "Command 4",
        ("<|START_THINKING|>", "<|START_ACTION|>", "<|START_TEXT|>"),
        "cohere_command4",
        "cohere_command4",
    ),
    # CohereForAI/c4ai-command-r7b-12-2024 tool_use template
    Signature("Command R7B", ("<|START_THINKING|>", "<|START_ACTION|>"), "command_r7b", "command_r7b"),
    # LiquidAI/LFM2.5-8B-A1B chat_template.jinja: a model that thinks, its template writes `<think>` blocks
    Signature("LFM2 thinking", ("<|tool_call_start|>", "<|tool_call_end|>", "<think>"), "lfm2", "lfm2"),
    # LiquidAI/LFM2 tokenizer_config.json added_tokens_decoder (ids 10, 11); LFM2-8B-A1B's template writes the others
    Signature("LFM2", ("<|tool_call_start|>", "<|tool_call_end|>"), "lfm2", None),
    Signature("LFM2", ("<|tool_list_start|>", "<|tool_response_start|>"), "lfm2", None),
    # deepseek-ai/DeepSeek-R1 and its distills: V3's calls (```json after the name), `</think>` cut from history
    Signature("DeepSeek R1", ("<｜tool▁sep｜>", "```json", "</think>"), "deepseekv3", "deepseek-r1"),
    # moonshotai/Kimi-K2-Thinking and Kimi-K2-Instruct
    Signature("Kimi K2 Thinking", ("<|tool_calls_section_begin|>", "<think>"), "kimi_k2", "kimi_k2"),
    Signature("Kimi K2", ("<|tool_calls_section_begin|>",), "kimi_k2", None),
    # moonshotai/Kimi-K3 (llama.cpp's models/templates/Kimi-K3.jinja): XTML's `<|open|>NAME<|sep|>` … `<|close|>NAME<|sep|>`
    Signature("Kimi K3 (XTML)", ("<|open|>", "<|close|>", "<|sep|>"), "kimi_k3", "kimi_k3"),
    # Muse Glimmer (llama.cpp's models/templates/muse-glimmer.jinja): ATEM calls in messages to a recipient
    Signature("Muse Glimmer", ("<atem:function_calls>", "<|eom|>"), "muse", "muse"),
    # MiniMaxAI/MiniMax-M3: every tool tag behind the `]<]minimax[>[` prefix, `<mm:think>`
    Signature("MiniMax M3", ("]<]minimax[>[", "<mm:think>"), "minimax-m3", "minimax-m3"),
    # MiniMaxAI/MiniMax-M1 (llama.cpp's models/templates/MiniMax-M1.jinja): MiniMax-Text-01's turn tokens and
    # `<tool_calls>`; the model opens every turn with `<think>`, which the template never writes
    Signature("MiniMax M1", ("<beginning_of_sentence>", "<end_of_sentence>", "<tool_calls>"), "minimax", "minimax"),
    # MiniMaxAI/MiniMax-M2 chat_template.jinja
    Signature("MiniMax M2", ("<minimax:tool_call>",), "minimax-m2", "minimax"),
    # ByteDance-Seed/Seed-OSS-36B-Instruct chat_template.jinja
    Signature("Seed-OSS", ("<seed:tool_call>", "<seed:think>"), "seed_oss", "seed_oss"),
    # nvidia/NVIDIA-Nemotron-Nano-9B-v2 chat_template.jinja
    Signature("Nemotron Nano v2", ("<TOOLCALL>",), "nemotron_nano_v2", "nemotron_nano_v2"),
    # ibm-granite/granite-3.3-2b-instruct (`<|tool_call|>`), granite-4.0 (`<tool_call>`)
    Signature("Granite 3", ("<|start_of_role|>", "<|tool_call|>"), "granite", "granite"),
    Signature("Granite 4", ("<|start_of_role|>", "<tool_call>"), "granite4", None),
    # ServiceNow-AI/Apriel-1.5-15b-Thinker and 1.6
    Signature("Apriel", ("<available_tools>", "[BEGIN FINAL RESPONSE]"), "apriel", "apriel"),
    # mistralai/Ministral-3-14B-Reasoning-2512, Magistral: `[THINK]…[/THINK]` beside Mistral's `[TOOL_CALLS]`
    Signature("Mistral reasoning", ("[TOOL_CALLS]", "[THINK]", "[/THINK]"), "mistral", "mistral"),
    # swiss-ai/Apertus-8B-Instruct-2509
    Signature("Apertus", ("<|tools_prefix|>", "<|inner_prefix|>"), "apertus2509", "apertus2509"),
    # ai-sage/GigaChat3.5 (llama.cpp's models/templates/GigaChat3.5.jinja): GigaChat 3's turns, GCML calls
    Signature("GigaChat 3.5", ("<|message_sep|>", "<｜GCML｜tool_calls>"), "gigachat35", "gigachat35"),
    # ai-sage/GigaChat3-10B-A1.8B
    Signature("GigaChat 3", ("<|message_sep|>", "<|role_sep|>"), "gigachat3", None),
    # tencent/Hy3 chat_template.jinja: `<｜hy_Assistant…｜>` turns (tokens may carry a checkpoint suffix,
    # `<｜hy_Assistant:opensource｜>`), calls from `<tool_calls…>`
    Signature("Hunyuan Hy3", ("<｜hy_Assistant", "<tool_calls"), "hunyuan", "hunyuan"),
    # poolside/Laguna-XS.2 and Laguna-S-2.1: the `〈|EOS|〉` token, `<assistant>` turns, GLM-style tagged arguments
    Signature("Poolside Laguna", ("〈|EOS|〉", "</assistant>", "<arg_key>"), "poolside_v1", "poolside_v1"),
    # openbmb/MiniCPM5-1B chat_template.jinja: `<function name="NAME"><param name="KEY">` calls at `<tool_sep>`
    Signature("MiniCPM 5", ("<tool_sep>", '<param name="'), "minicpm5", "minicpm5"),
    # fireworks-ai/llama-3-firefunction-v2: ` functools[{…}]`
    Signature("FireFunction v2", (" functools[",), "firefunction_v2", None),
    # meetkai/functionary-medium-v3.1: `<function=NAME>{…}</function>`, `<|python_tag|>` for code
    Signature("functionary v3.1", ("<function=", "<|python_tag|>"), "functionary_v3_1", None),
)


def recognise(texts: tuple[str, ...], special_tokens: frozenset[str]) -> Recognition | None:
    """The first family whose markers are all in `texts` (a template's
    sources) or among `special_tokens`."""
    for signature in SIGNATURES:
        in_text = tuple(marker for marker in signature.markers if any(marker in text for text in texts))
        in_tokens = tuple(marker for marker in signature.markers if marker not in in_text and marker in special_tokens)
        if len(in_text) + len(in_tokens) == len(signature.markers):
            return Recognition(signature, in_text, in_tokens)
    return None
