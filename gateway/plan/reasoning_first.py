"""A decoding constraint that lets a thinking model reason first (issue 43,
"Reasoning under constraints"; docs/api.md, "Reasoning under a constraint").

A raw-text backend applies a constraint from the reply's first token: vLLM
and SGLang wait for the end of reasoning only when they run a reasoning
parser of their own (vLLM's `StructuredOutputManager.should_advance`,
vllm/v1/structured_output/__init__.py; SGLang's `ReasonerGrammarBackend`,
python/sglang/srt/constrained/reasoner_grammar_backend.py, both switched on
by `--reasoning-parser`), which a raw-text backend runs without. So the
constraint parsegate forwards carries the reasoning block itself, as
xgrammar's built-in structural tags do for a thinking model
(`get_model_structural_tag(..., reasoning=True)`,
python/xgrammar/builtin_structural_tag.py): any text up to the end marker,
a little whitespace, then the JSON the request asked for.

- `reasoning_block`: the block a reply to this request may open with, as
  the model's reasoning stage reads it (the same thinking switch), or None
  when the reply has no reasoning to wait for or the format's reasoning is
  not a pair of text markers (Harmony channels, several end spellings).
- `structural_tag`: that block, then a JSON schema, in xgrammar's structural
  tag format (`{"type": "structural_tag", "format": …}`, xgrammar 0.1.25 and
  later: vLLM's `structured_outputs.structural_tag`, SGLang's
  `response_format`).
- `grammar`: the same as a GBNF grammar for llama.cpp's `grammar`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from gateway.plan.gbnf import literal, schema_grammar
from parsers import reasoning_format
from parsers.stages.reasoning import ReasoningFormat

GAP_CHARACTERS, GAP_MOST = "[ \\t\\r\\n]", 4  # between the reasoning's end and the JSON: Qwen3 writes "\n\n"


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """`opener` None: the reply starts inside reasoning (its template
    opened it, or the format reads it so), and the block runs to `end`;
    else the block is optional and opens with `opener`."""

    opener: str | None
    end: str


def reasoning_block(stage: str | ReasoningFormat | None, chat_template_kwargs: dict | None) -> ReasoningBlock | None:
    """The reasoning block a reply read by `stage` may start with, under this
    request's thinking switch (module docstring)."""
    if stage is None:
        return None
    fmt = reasoning_format(stage)
    plain_markers = fmt.stage is None and fmt.separates and not fmt.other_starts
    if not plain_markers or any(fmt.end not in end for end in fmt.other_ends):
        return None
    if not fmt.thinking_enabled(chat_template_kwargs or {}):
        return None
    return ReasoningBlock(fmt.start if fmt.start_required else None, fmt.end)


def structural_tag(schema: dict, block: ReasoningBlock) -> dict:
    """xgrammar's structural tag: the reasoning block, then `schema`."""
    reasoning = {"type": "tag", "begin": block.opener or "", "content": {"type": "any_text"}, "end": block.end}
    gap = {"type": "regex", "pattern": f"{GAP_CHARACTERS}{{0,{GAP_MOST}}}"}
    answer = {"type": "json_schema", "json_schema": schema}
    after_reasoning = {"type": "sequence", "elements": [reasoning, gap, answer]}
    if block.opener is None:
        return {"type": "structural_tag", "format": after_reasoning}
    return {"type": "structural_tag", "format": {"type": "or", "elements": [after_reasoning, answer]}}


def grammar(schema: dict, block: ReasoningBlock) -> str:
    """A GBNF grammar: the reasoning block, then `schema` (gbnf.py)."""
    reasoning = "reasoning gap" if block.opener is None else f"({literal(block.opener)} reasoning gap)?"
    rules = [f"root ::= {reasoning} answer", *_text_through(block.end, "reasoning")]
    rules.append(f"gap ::= {GAP_CHARACTERS}{{0,{GAP_MOST}}}")
    return "\n".join(rules) + "\n" + schema_grammar(schema, start="answer")


@cache  # a model has one end marker: made once (0.6 ms for `</think>`), not per request
def _text_through(end: str, name: str) -> tuple[str, ...]:
    """GBNF rules `name`, `name-1`…: any text that first contains `end` at
    its very end. One rule per length of `end` matched so far, each
    character moving to the next rule as a string search would (the
    Knuth-Morris-Pratt automaton), so the grammar stays deterministic."""
    rules = []
    for matched in range(len(end)):
        moves = {char: _after(end, matched, char) for char in dict.fromkeys(end)}
        arms = [
            literal(char) if target == len(end) else f"{literal(char)} {_state(name, target)}"
            for char, target in moves.items()
            if target > 0
        ]
        others = "".join(_class_escaped(char) for char, target in moves.items() if target > 0)
        arms.append(f"[^{others}] {_state(name, 0)}")
        rules.append(f"{_state(name, matched)} ::= " + " | ".join(arms))
    return tuple(rules)


def _after(end: str, matched: int, char: str) -> int:
    """How much of `end` is matched after `char` follows `matched` of it."""
    text = end[:matched] + char
    return next(length for length in range(len(text), -1, -1) if end.startswith(text[len(text) - length :]))


def _state(name: str, matched: int) -> str:
    return name if matched == 0 else f"{name}-{matched}"


def _class_escaped(char: str) -> str:
    """`char` inside a GBNF character class."""
    if char in "\\]^-[":
        return "\\" + char
    return literal(char)[1:-1]
