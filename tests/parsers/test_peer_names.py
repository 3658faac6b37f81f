"""Parser names in either spelling: `-` and `_` name the same format
(vLLM's `granite-20b-fc`, llama.cpp's `command_r7b`), in the library, the
config and the CLI; listings show each name once, as registered."""

from __future__ import annotations

import io
import json
import sys

import pytest

from gateway.cli import main
from gateway.ops.config import load_config
from parsers import (
    parse_text,
    reasoning_format,
    reasoning_parser_names,
    tool_call_parser_names,
    tool_format,
)
from parsers.formats.table import spelling_key

SPELLED = [name for name in tool_call_parser_names() if "-" in name or "_" in name]


def _other_spellings(name: str) -> list[str]:
    return [spelling for spelling in (name.replace("-", "_"), name.replace("_", "-")) if spelling != name]


@pytest.mark.parametrize("name", SPELLED)
def test_a_tool_call_parser_is_found_under_either_spelling(name):
    for spelling in _other_spellings(name):
        assert tool_format(spelling) is tool_format(name)


@pytest.mark.parametrize("name", [n for n in reasoning_parser_names() if "-" in n or "_" in n])
def test_a_reasoning_parser_is_found_under_either_spelling(name):
    for spelling in _other_spellings(name):
        assert reasoning_format(spelling) is reasoning_format(name)


def test_listings_name_each_parser_once():
    for names in (tool_call_parser_names(), reasoning_parser_names()):
        keys = [spelling_key(name) for name in names]
        assert len(keys) == len(set(keys))


def test_unknown_names_stay_unknown_in_any_spelling():
    with pytest.raises(KeyError, match="no_such_parser"):
        tool_format("no_such_parser")


def test_parsing_under_the_other_spelling_gives_the_same_result():
    text = '<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert parse_text(text, None, "granite_20b_fc").to_json() == parse_text(text, None, "granite-20b-fc").to_json()
    assert parse_text(text, None, "granite_20b_fc").tool_calls


def test_config_accepts_either_spelling_and_keeps_the_registered_one(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n  - name: g\n    backend: {url: 'http://127.0.0.1:8000/v1'}\n"
        "    tool_call_parser: granite_20b_fc\n    reasoning_parser: granite-thinking\n"
    )
    model = load_config(path, {}).models[0]
    assert (model.tool_call_parser, model.reasoning_parser) == ("granite-20b-fc", "granite_thinking")


def test_cli_parse_accepts_either_spelling(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO('functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]'))
    assert main(["parse", "--tool-call-parser", "phi4-mini-json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}}
    ]
