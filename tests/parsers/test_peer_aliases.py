"""The peers' names (vLLM's `--tool-call-parser` / `--reasoning-parser`,
llama.cpp's chat formats) for formats registered under another name: each
is the format it names, parses that format's cases the same, is accepted by
the config as written, and is listed with the name it stands for."""

from __future__ import annotations

import pytest

from gateway.ops.config import load_config
from parsers import (
    reasoning_format,
    reasoning_parser_aliases,
    tool_call_parser_aliases,
    tool_format,
)
from parsers.formats.peer_names import REASONING_NAMES, TOOL_CALL_NAMES
from tests.corpus import load_cases, load_declined
from tests.parsers.test_conformance import parse_with

CASES = load_cases()
DECLINED = load_declined()


def _target_cases(key: str, target: str) -> list[dict]:
    """Up to five of the target's own cases (none of them an alias's copy)."""
    own = [c for c in CASES if c[key] == target and c["id"] not in DECLINED and "peer_names." not in c["id"]]
    return own[:5]


@pytest.mark.parametrize(("name", "target"), [row[:2] for row in TOOL_CALL_NAMES])
def test_a_tool_call_alias_is_the_format_it_names(name, target):
    assert tool_format(name) is tool_format(target)
    assert tool_call_parser_aliases()[name] == target


@pytest.mark.parametrize(("name", "target"), [row[:2] for row in REASONING_NAMES])
def test_a_reasoning_alias_is_the_format_it_names(name, target):
    assert reasoning_format(name) is reasoning_format(target)
    assert reasoning_parser_aliases()[name] == target


@pytest.mark.parametrize(("name", "target"), [row[:2] for row in TOOL_CALL_NAMES])
def test_a_tool_call_alias_parses_its_targets_cases_the_same(name, target):
    cases = _target_cases("tool_parser", target)
    assert cases, f"{target} has no cases to compare with"
    for case in cases:
        for pieces in ([case["text"]], list(case["text"])):
            under_alias = parse_with(case, pieces, case["reasoning_parser"], name)
            assert under_alias == parse_with(case, pieces, case["reasoning_parser"], target), case["id"]


@pytest.mark.parametrize(("name", "target"), [row[:2] for row in REASONING_NAMES])
def test_a_reasoning_alias_parses_its_targets_cases_the_same(name, target):
    cases = _target_cases("reasoning_parser", target)
    assert cases, f"{target} has no cases to compare with"
    for case in cases:
        for pieces in ([case["text"]], list(case["text"])):
            under_alias = parse_with(case, pieces, name, case["tool_parser"])
            assert under_alias == parse_with(case, pieces, target, case["tool_parser"]), case["id"]


def test_the_aliases_listed_are_the_peers_names_and_the_older_ones():
    assert {name for name, _, _ in TOOL_CALL_NAMES} <= set(tool_call_parser_aliases())
    assert tool_call_parser_aliases()["qwen"] == "qwen25"  # an alias registered with its format
    assert "qwen25" not in tool_call_parser_aliases()


def test_the_config_takes_a_vllm_name_as_written(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n  - name: oss\n    backend: {url: 'http://127.0.0.1:8000/v1'}\n"
        "    tool_call_parser: openai\n    reasoning_parser: openai_gptoss\n"
    )
    model = load_config(path, {}).models[0]
    assert (model.tool_call_parser, model.reasoning_parser) == ("openai", "openai_gptoss")
