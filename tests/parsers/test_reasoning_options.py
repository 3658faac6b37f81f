"""Format options of the reasoning stage that the corpus does not pin:
Gemma 4's self-label, Granite's newline after `</think>`, and the
`force_nonempty_content` switch, each at every two-piece split and one
character at a time."""

from __future__ import annotations

import pytest

from parsers import ParseResult, make_pipeline


def parse(reasoning_parser: str, pieces: list[str], **options) -> tuple[str | None, str | None]:
    pipeline = make_pipeline(reasoning_parser, None, **options)
    result = ParseResult()
    for piece in pieces:
        result.add(pipeline.feed(piece))
    result.add(pipeline.finish())
    return result.reasoning_content, result.content


def every_split(text: str) -> list[list[str]]:
    return [[text]] + [[text[:i], text[i:]] for i in range(1, len(text))] + [list(text)]


def assert_at_every_split(reasoning_parser: str, text: str, expected, **options) -> None:
    for pieces in every_split(text):
        assert parse(reasoning_parser, pieces, **options) == expected, pieces


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<|channel>thought\nPlan.<channel|>Answer.", ("Plan.", "Answer.")),
        ("<|channel>Plan.<channel|>Answer.", ("Plan.", "Answer.")),
        ("<|channel>thoughtful plan<channel|>Answer.", ("thoughtful plan", "Answer.")),
        ("<|channel>thou", ("thou", None)),
        ("Answer without thinking.", (None, "Answer without thinking.")),
    ],
)
def test_gemma4_drops_its_thought_label_only_right_after_the_start(text, expected):
    assert_at_every_split("gemma4", text, expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>Plan.</think>\nAnswer.", ("Plan.", "Answer.")),
        ("<think>Plan.</think>\n\nAnswer.", ("Plan.", "\nAnswer.")),
        ("<think>Plan.</think>Answer.\n", ("Plan.", "Answer.\n")),
        ("Answer.\nMore.", (None, "Answer.\nMore.")),
    ],
)
def test_granite_drops_the_one_newline_after_its_reasoning(text, expected):
    assert_at_every_split("granite_thinking_parser", text, expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>Only reasoning.</think>", (None, "Only reasoning.")),
        ("<think>Cut short", (None, "Cut short")),
        ("<think>Plan.</think>Answer.", ("Plan.", "Answer.")),
        ("<think>Plan.<tool_call>", ("Plan.", "<tool_call>")),
        ("Plain answer.", (None, "Plain answer.")),
    ],
)
def test_force_nonempty_content_reports_an_all_reasoning_turn_as_content(text, expected):
    assert_at_every_split("qwen3", text, expected, force_nonempty_content=True)


def test_force_nonempty_content_holds_reasoning_back_until_content_appears():
    pipeline = make_pipeline("qwen3", None, force_nonempty_content=True)
    assert pipeline.feed("<think>Plan") == []
    events = pipeline.feed(" more.</think>Answer")
    assert [(type(e).__name__, e.text) for e in events] == [("Reasoning", "Plan more."), ("Content", "Answer")]


@pytest.mark.parametrize("parser", ["deepseek-v3", "deepseek-v4", "deepseek-v41"])
@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"enable_thinking": True}, ("Plan.", "Answer.")),
        ({"thinking": True}, ("Plan.", "Answer.")),
        ({"enable_thinking": False}, (None, "Plan.</think>Answer.")),
        ({}, (None, "Plan.</think>Answer.")),
    ],
)
def test_deepseek_hybrids_think_with_either_switch(parser, kwargs, expected):
    """vLLM's DeepSeek V3/V4 reasoning parsers think with `thinking` or
    `enable_thinking` (llama.cpp's generic switch) set."""
    assert_at_every_split(parser, "Plan.</think>Answer.", expected, chat_template_kwargs=kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"enable_thinking": True}, {"thinking": True}])
def test_command_r7b_reasons_only_from_its_start_marker(kwargs):
    """Command R7B's template ends at `<|CHATBOT_TOKEN|>`: the model opens
    reasoning itself, so no request switch makes a plain answer reasoning
    (llama.cpp forces it open only for a prompt ending in `<|START_THINKING|>`)."""
    assert_at_every_split("command_r7b", "Hello, world!", (None, "Hello, world!"), chat_template_kwargs=kwargs)
    text = "<|START_THINKING|>Hmm.<|END_THINKING|><|START_RESPONSE|>Hi.<|END_RESPONSE|>"
    assert_at_every_split("command_r7b", text, ("Hmm.", "Hi."), chat_template_kwargs=kwargs)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"thinking_budget": 0}, (None, "Plan.</seed:think>Answer.")),
        ({"thinking_budget": 0.0}, (None, "Plan.</seed:think>Answer.")),
        ({"thinking_budget": -1}, ("Plan.", "Answer.")),
        ({"thinking_budget": 512}, ("Plan.", "Answer.")),
        ({"thinking_budget": "0"}, ("Plan.", "Answer.")),
        ({"enable_thinking": False}, ("Plan.", "Answer.")),
        ({}, ("Plan.", "Answer.")),
        (None, ("Plan.", "Answer.")),
    ],
)
def test_seed_oss_thinks_unless_its_budget_is_zero(kwargs, expected):
    """Seed-OSS's template compares `thinking_budget == 0` and then writes the
    whole think block into the prompt; any other budget (a string `"0"`
    included, which is not 0 to the template) leaves the model thinking."""
    assert_at_every_split("seed_oss", "Plan.</seed:think>Answer.", expected, chat_template_kwargs=kwargs)


@pytest.mark.parametrize(
    "parser, start, end", [("lfm2", "<think>", "</think>"), ("apriel", "<thinking>", "</thinking>")]
)
@pytest.mark.parametrize("kwargs", [None, {}, {"enable_thinking": True}, {"thinking": True}])
def test_lfm2_and_apriel_reason_only_from_their_start_marker(parser, start, end, kwargs):
    """Neither template opens the reasoning block (LFM2.5-8B-A1B and Apriel
    1.5 write it themselves when they think), so no switch makes a plain
    answer reasoning."""
    assert_at_every_split(parser, "Hello, world!", (None, "Hello, world!"), chat_template_kwargs=kwargs)
    assert_at_every_split(parser, f"{start}Hmm.{end}Hi.", ("Hmm.", "Hi."), chat_template_kwargs=kwargs)
