"""The GBNF rules of a reasoning block (gateway.plan.reasoning_first), read
as the automaton llama.cpp runs them: for any end marker, they accept a
text exactly when the marker first appears at its very end, and at every
point exactly one arm takes the next character (one parse, so the grammar
engine keeps one stack). A real llama-server runs them in
tests/e2e/test_reasoning_grammar.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.plan.reasoning_first import ReasoningBlock, grammar

ALPHABET = "ab</>x"  # small, so that markers overlap themselves and the text often


def reasoning_rules(end: str) -> dict[str, list[str]]:
    """The `reasoning` rules of the grammar for `end`, each as its arms."""
    text = grammar({"type": "object"}, ReasoningBlock(None, end))
    rules = {}
    for line in text.splitlines():
        name, _, body = line.partition(" ::= ")
        if name == "reasoning" or name.startswith("reasoning-"):
            rules[name] = body.split(" | ")
    return rules


def takes(arm: str, char: str) -> tuple[bool, str | None]:
    """Whether `arm` takes `char`, and the rule it goes on with (None: the block ends)."""
    if arm.startswith("[^"):
        excluded, _, target = arm[2:].partition("] ")
        return char not in excluded, target
    literal, _, target = arm[1:].partition('"')
    return literal == char, target.strip() or None


def accepts(rules: dict[str, list[str]], text: str) -> bool:
    state: str | None = "reasoning"
    for position, char in enumerate(text):
        if state is None:
            return False  # the block ended before the text did
        moves = [target for ok, target in (takes(arm, char) for arm in rules[state]) if ok]
        assert len(moves) == 1, (state, char, moves)
        state = moves[0]
        if state is None and position != len(text) - 1:
            return False
    return state is None


@given(
    end=st.text(alphabet=ALPHABET, min_size=1, max_size=6),
    text=st.text(alphabet=ALPHABET, max_size=40),
)
def test_the_block_ends_at_the_first_end_marker(end: str, text: str) -> None:
    rules = reasoning_rules(end)
    assert len(rules) == len(end)
    expected = text.endswith(end) and text.find(end) == len(text) - len(end)
    assert accepts(rules, text) == expected
    assert accepts(rules, text + end) == (end not in text + end[:-1])


def test_qwen3_s_end_marker_after_false_starts():
    rules = reasoning_rules("</think>")
    assert accepts(rules, "Compare </th and <</think") is False
    assert accepts(rules, "Compare </th and <</think>") is True
    assert accepts(rules, "</think></think>") is False
