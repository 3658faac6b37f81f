"""Every corpus case, for every registered parser name.

Each case is parsed one-shot, one character at a time, in seeded random
splits and in the case's own chunks; all must give the same result, and
that result must meet the case's expectation unless the case is declined
in `declined.yaml` with a reason.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from parsers import (
    ParseResult,
    make_pipeline,
    reasoning_parser_name,
    reasoning_parser_names,
    tool_call_parser_name,
    tool_call_parser_names,
)
from tests.corpus import load_cases, load_declined, mismatches

CASES = load_cases()
DECLINED = load_declined()
TOOL_NAMES = set(tool_call_parser_names())
REASONING_NAMES = set(reasoning_parser_names())


def _registered(case: dict) -> bool:
    """Whether the case's parsers are registered, under either spelling (`-` or `_`)."""
    tool, reasoning = case["tool_parser"], case["reasoning_parser"]
    return (tool is None or tool_call_parser_name(tool) in TOOL_NAMES) and (
        reasoning is None or reasoning_parser_name(reasoning) in REASONING_NAMES
    )


RUNNABLE = [case for case in CASES if _registered(case)]


def parse(case: dict, pieces: list[str]) -> dict:
    return parse_with(case, pieces, case["reasoning_parser"], case["tool_parser"])


def parse_with(case: dict, pieces: list[str], reasoning, tool) -> dict:
    """The case's text fed in `pieces` through the `reasoning` and `tool`
    stages (names, or formats), with the case's options."""
    options = case.get("reasoning_options") or {}
    pipeline = make_pipeline(
        reasoning,
        tool,
        tools=case.get("tools"),
        force_reasoning=options.get("force_reasoning"),
        chat_template_kwargs=options.get("chat_template_kwargs"),
        stream_reasoning=options.get("stream_reasoning", True),
        force_nonempty_content=options.get("force_nonempty_content", False),
    )
    result = ParseResult()
    for piece in pieces:
        result.add(pipeline.feed(piece))
    result.add(pipeline.finish())
    parsed = result.to_json()
    parsed["raw_arguments"] = [arguments for _, arguments in result.tool_calls]
    return parsed


def splits(case: dict) -> dict[str, list[str]]:
    text = case["text"]
    ways = {"one-shot": [text], "1-char": list(text)}
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        ways[f"random seed {seed}"] = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    if case.get("chunks"):
        ways["case chunks"] = case["chunks"]
    return ways


@pytest.mark.parametrize("case", RUNNABLE, ids=[case["id"] for case in RUNNABLE])
def test_case(case):
    results = {label: parse(case, pieces) for label, pieces in splits(case).items()}
    one_shot = results["one-shot"]
    for label, result in results.items():
        assert result == one_shot, f"{label} differs from one-shot"
    problems = mismatches(case, one_shot)
    if case["id"] in DECLINED:
        assert problems, "declined case now meets its expectation: remove it from declined.yaml"
    else:
        assert not problems, "\n".join(problems)


def _names_in(cases, kind_key, names):
    return Counter(case[kind_key] for case in cases if case[kind_key] in names)


@pytest.mark.parametrize("name", sorted(TOOL_NAMES))
def test_tool_parser_has_passing_cases(name):
    passing = [c for c in RUNNABLE if c["tool_parser"] == name and c["id"] not in DECLINED]
    assert passing, f"tool-call parser {name!r} has no conformance cases"


@pytest.mark.parametrize("name", sorted(REASONING_NAMES))
def test_reasoning_parser_has_passing_cases(name):
    passing = [c for c in RUNNABLE if c["reasoning_parser"] == name and c["id"] not in DECLINED]
    assert passing, f"reasoning parser {name!r} has no conformance cases"


def test_declined_ids_exist():
    known = {case["id"] for case in CASES}
    assert not set(DECLINED) - known


def test_every_corpus_parser_is_registered():
    unregistered = Counter(
        f"tool={case['tool_parser']} reasoning={case['reasoning_parser']}" for case in CASES if not _registered(case)
    )
    assert not unregistered, f"corpus cases for parsers not registered: {dict(unregistered)}"
