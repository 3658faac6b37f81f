"""Suffixed special tokens (`<think:opensource>`) are written bare at any
split of the text, and nothing else is changed or lost."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.stages.token_suffix import SuffixStripper

NAMES = ("think", "tool_call", "tool_calls", "hy_eos")
PIECES = [
    "<",
    "</",
    "<｜",
    "｜>",
    "｜",
    ":",
    ">",
    "think",
    "tool_call",
    "s",
    "hy_eos",
    "opensource",
    " ",
    "\n",
    "x",
    "a" * 70,
]
# What the stripper must do, written once over the whole text.
ORACLE = re.compile(
    r"<(/?)(think|tool_calls|tool_call|hy_eos):[^<>｜\s]{1,64}>|<｜(think|tool_calls|tool_call|hy_eos):[^<>｜\s]{1,64}｜>"
)


def bare(match: re.Match) -> str:
    return f"<｜{match.group(3)}｜>" if match.group(3) else f"<{match.group(1)}{match.group(2)}>"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join), st.data())
def test_any_split_gives_the_bare_spelling_and_keeps_all_other_text(text, data):
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    stripper = SuffixStripper(NAMES)
    out = (
        "".join(stripper.feed(text[a:b]) for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True))
        + stripper.finish()
    )
    assert out == ORACLE.sub(bare, text)


def test_examples():
    stripper = SuffixStripper(NAMES)
    text = (
        "<think:opensource>a</think:6124c78e><tool_calls:x><｜hy_eos:opensource｜> <b:opensource> <think:> <think:a b>"
    )
    assert (
        stripper.feed(text) + stripper.finish()
        == "<think>a</think><tool_calls><｜hy_eos｜> <b:opensource> <think:> <think:a b>"
    )
