"""A tiny llama-architecture GGUF with random weights, written in the test.

The vocabulary is byte-level BPE (`tokenizer.ggml.model = gpt2`): the 256
byte tokens in GPT-2's byte-to-unicode spelling, so any UTF-8 text can be
produced, plus a few merges (the gpt2 tokenizer needs some, and GGUF rejects
an empty array). BOS and EOS are CONTROL tokens; the caller's markers
(`<think>`, `<tool_call>`, `<|channel|>`, ...) are USER_DEFINED tokens, as in
real Qwen GGUFs, so that they are rendered as text.

Note that llama.cpp itself retypes a few marker texts it knows as end of turn
(`<|im_end|>`, `<|end|>`, `<|return|>`, `<|call|>`, `<|endoftext|>`, ...):
they become CONTROL and end-of-generation tokens whatever the file says.

The weights are random: the model's output is only meaningful under a
grammar (see `literal_grammar` in tests/e2e/llama.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import gguf
import numpy as np

BOS = "<|bos|>"
EOS = "<|eos|>"

# The markers of the formats the gateway parses, as tokens of their own.
MARKERS = [
    "<think>", "</think>",
    "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>",
    "<|im_start|>", "<|im_end|>",
    "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
    "<|channel|>", "<|message|>", "<|start|>", "<|end|>",
    "<|call|>", "<|return|>", "<|constrain|>",
]  # fmt: skip

# A ChatML template with tools, like Qwen's, after a BOS like Llama's.
CHAT_TEMPLATE = """\
{{- bos_token -}}
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}{% for call in message.tool_calls %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>{% endfor %}{% endif %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

# Pairs merged by the tokenizer, in GPT-2 spelling ("Ġ" is the space).
MERGES: tuple[tuple[str, str], ...] = (
    ("Ġ", "t"),
    ("h", "e"),
    ("i", "n"),
    ("e", "r"),
    ("o", "n"),
)


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable code points."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def byte_token_id(byte: int) -> int:
    """The id of the token for one byte: byte tokens come first, in
    `byte_to_unicode` order."""
    return list(byte_to_unicode()).index(byte)


def write_tiny_gguf(
    path: str | os.PathLike[str],
    *,
    markers: Sequence[str],
    chat_template: str,
    bos: str = BOS,
    eos: str = EOS,
    add_bos: bool = True,
    n_embd: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    n_ff: int = 128,
    n_ctx: int = 4096,
    seed: int = 0,
) -> Path:
    """Write the model to `path` and return it as a Path."""
    path = Path(path)
    tokens: list[str] = []
    types: list[int] = []

    def add(text: str, kind: gguf.TokenType) -> None:
        if text in tokens:
            raise ValueError(f"token {text!r} given twice")
        tokens.append(text)
        types.append(int(kind))

    for spelling in byte_to_unicode().values():
        add(spelling, gguf.TokenType.NORMAL)
    for left, right in MERGES:
        add(left + right, gguf.TokenType.NORMAL)
    add(bos, gguf.TokenType.CONTROL)
    add(eos, gguf.TokenType.CONTROL)
    for marker in markers:
        add(marker, gguf.TokenType.USER_DEFINED)

    n_vocab = len(tokens)
    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([f"{left} {right}" for left, right in MERGES])
    writer.add_bos_token_id(tokens.index(bos))
    writer.add_eos_token_id(tokens.index(eos))
    writer.add_add_bos_token(add_bos)
    writer.add_add_eos_token(False)
    writer.add_chat_template(chat_template)

    # numpy shapes are ggml's reversed: (rows = outputs, columns = inputs).
    writer.add_tensor("token_embd.weight", weight(n_vocab, n_embd))
    for i in range(n_layer):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones(n_embd))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{blk}.{name}.weight", weight(n_embd, n_embd))
        writer.add_tensor(f"{blk}.ffn_norm.weight", ones(n_embd))
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(n_embd, n_ff))
    writer.add_tensor("output_norm.weight", ones(n_embd))
    writer.add_tensor("output.weight", weight(n_vocab, n_embd))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


if __name__ == "__main__":  # python -m tests.e2e.tiny_gguf tiny.gguf: the demo model of docs/template-mode.md
    import sys

    print(write_tiny_gguf(sys.argv[1], markers=MARKERS, chat_template=CHAT_TEMPLATE))
