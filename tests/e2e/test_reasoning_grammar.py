"""The llama.cpp grammars that let a thinking model reason before a forced
call (gateway.plan.reasoning_first), run by a real llama-server: its random
model, sampling freely with several seeds and nudged towards the reasoning
markers (tokens of their own, as in Qwen's GGUFs), must write any text up to
the end marker, at most 4 whitespace characters, then JSON that the call
array's schema accepts, every time. jsonschema-rs is the judge."""

from __future__ import annotations

import json

import httpx
import jsonschema_rs

from gateway.plan.constraints import call_array_schema
from gateway.plan.reasoning_first import ReasoningBlock, grammar
from tests.e2e.test_schema_grammar import ASCII_ONLY, CLOCK, SEEDS, WEATHER
from tests.e2e.tiny_gguf import MARKERS, MERGES

SCHEMA = call_array_schema([WEATHER, CLOCK], None, True)
FIRST_MARKER_ID = 256 + len(MERGES) + 2  # the bytes, the merges, BOS and EOS come first (tiny_gguf.py)
NUDGE = 2.0  # added to a marker token's logit: often written, never all the model writes


def marker_id(marker: str) -> int:
    return FIRST_MARKER_ID + MARKERS.index(marker)


def sample(llama: httpx.Client, rules: str, seed: int, nudged: list[str]) -> str:
    bias = [*ASCII_ONLY, *([marker_id(marker), NUDGE] for marker in nudged)]
    response = llama.post(
        "/v1/completions",
        json={
            "prompt": "Think, then call:",
            "grammar": rules,
            "max_tokens": 3000,
            "seed": seed,
            "temperature": 1.0,
            "logit_bias": bias,
        },
    )
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "stop", f"seed {seed}: {choice['text'][:200]!r}"
    return choice["text"]


def check_answer(text: str, seed: int) -> None:
    """`text` (after the reasoning) is at most 4 whitespace characters,
    then a call array."""
    gap = len(text) - len(text.lstrip(" \t\r\n"))
    assert gap <= 4, f"seed {seed}: {text!r}"
    errors = [error.message for error in jsonschema_rs.validator_for(SCHEMA).iter_errors(json.loads(text))]
    assert errors == [], f"seed {seed}: {text!r}"


def test_reasoning_runs_to_its_end_marker_then_the_calls_follow(llama: httpx.Client) -> None:
    rules = grammar(SCHEMA, ReasoningBlock(None, "</think>"))
    for seed in SEEDS:
        text = sample(llama, rules, seed, ["</think>"])
        reasoning, end, answer = text.partition("</think>")
        assert end, f"seed {seed}: {text[:200]!r}"
        check_answer(answer, seed)


def test_an_optional_block_opens_only_at_its_start_marker(llama: httpx.Client) -> None:
    rules = grammar(SCHEMA, ReasoningBlock("<think>", "</think>"))
    opened = 0
    for seed in SEEDS:
        text = sample(llama, rules, seed, ["<think>", "</think>"])
        if text.startswith("<think>"):
            opened += 1
            _, end, text = text.partition("</think>")
            assert end, f"seed {seed}: {text[:200]!r}"
        check_answer(text, seed)  # else all of it (a string in it may hold the markers)
    assert opened > 0
