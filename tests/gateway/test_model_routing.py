"""Model routing: several models in one config, and model entries that name
no parsers get them from their backend model name (the family table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.ops.config import Config, ConfigError, load_config
from gateway.ops.model_families import FAMILIES, family_of
from parsers import reasoning_parser_names, tool_call_parser_names
from tests.gateway.test_cli import parsegate
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TOOLS, message_result

PICKS = [
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder", None),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", "qwen3_coder", None),
    ("Qwen/Qwen3.5-35B-A3B", "qwen3_coder", "qwen3"),
    ("Qwen/Qwen3-4B-Thinking-2507", "qwen25", "qwen3-thinking"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen25", None),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen25", None),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen25", "qwen3-thinking"),
    ("Qwen/Qwen3-8B", "qwen25", "qwen3"),
    ("qwen3:8b", "qwen25", "qwen3"),  # an Ollama tag
    ("Qwen/Qwen2.5-7B-Instruct", "qwen25", None),
    ("deepseek-ai/DeepSeek-R1-0528", "deepseekv3", "deepseek-r1"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", None, "deepseek-r1"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseekv3", None),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseekv31", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseekv31", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V3.2", "deepseekv32", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V4", "deepseekv4", "deepseek-v4"),
    ("deepseek-ai/DeepSeek-V4.1", "deepseekv41", "deepseek-v41"),
    ("moonshotai/Kimi-K2-Thinking", "kimi_k2", "kimi_k2"),
    ("moonshotai/Kimi-K2.5", "kimi_k2", "kimi_k2"),
    ("moonshotai/Kimi-K2-Instruct", "kimi_k2", None),
    ("moonshotai/Kimi-K2-Instruct-0905", "kimi_k2", None),
    ("zai-org/GLM-4.6", "glm45", "glm45"),
    ("zai-org/GLM-4.7", "glm47", "glm45"),
    ("zai-org/GLM-5", "glm47", "glm45"),
    ("MiniMaxAI/MiniMax-M2.1", "minimax-m2", "minimax"),
    ("MiniMaxAI/MiniMax-M3", "minimax-m3", "minimax-m3"),
    ("MiniMaxAI/MiniMax-M1-80k", "minimax", "minimax"),
    ("rednote-hilab/dots.llm1.inst", "dots", None),
    ("ai-sage/GigaChat3.5-10B-A1.8B", "gigachat35", "gigachat35"),
    ("openai/gpt-oss-120b", "gpt-oss", "gpt-oss"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "pythonic", None),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3", None),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama3", None),
    ("mistralai/Devstral-Small-2507", "mistral", None),
    ("mistralai/Magistral-Small-2509", "mistral", "mistral"),
    ("mistralai/Ministral-3-14B-Reasoning-2512", "mistral", "mistral"),
    ("mistralai/Ministral-3-14B-Instruct-2512", "mistral", None),
    ("google/gemma-4-31b-it", "gemma4", "gemma4"),
    ("LiquidAI/LFM2-1.2B", "lfm2", "lfm2"),
    ("LiquidAI/LFM2.5-8B-A1B", "lfm2", "lfm2"),
    ("internlm/Intern-S1", "interns1", "interns1"),
    ("internlm/internlm2_5-7b-chat", "internlm", None),
    ("ServiceNow-AI/Apriel-1.5-15b-Thinker", "apriel", "apriel"),
    ("ServiceNow-AI/Apriel-1.6-15b-Thinker", "apriel", None),
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", "seed_oss", "seed_oss"),
    ("swiss-ai/Apertus-8B-Instruct-2509", "apertus2509", "apertus2509"),
    ("CohereLabs/command-a-reasoning-08-2025", "cohere_command4", "cohere_command4"),
    ("some-org/my-own-model", None, None),
]


@pytest.mark.parametrize(("model", "tool_call_parser", "reasoning_parser"), PICKS)
def test_entry_without_parsers_takes_them_from_the_backend_model_name(model, tool_call_parser, reasoning_parser):
    config = Config.model_validate(
        {"models": [{"name": "m", "backend": {"url": "http://127.0.0.1:9/v1", "model": model}}]}
    )
    entry = config.models[0]
    assert (entry.tool_call_parser, entry.reasoning_parser) == (tool_call_parser, reasoning_parser)


def test_the_name_is_the_backend_model_else_the_entry_name():
    config = Config.model_validate({"models": [{"name": "zai-org/GLM-4.6", "backend": {"url": "http://x/v1"}}]})
    assert config.models[0].tool_call_parser == "glm45"


def test_naming_either_parser_turns_the_table_off():
    entry = {"name": "m", "backend": {"url": "http://x/v1", "model": "Qwen/Qwen3-8B"}}
    only_tools = Config.model_validate({"models": [{**entry, "tool_call_parser": "hermes"}]}).models[0]
    assert (only_tools.tool_call_parser, only_tools.reasoning_parser) == ("hermes", None)
    nothing = Config.model_validate({"models": [{**entry, "reasoning_parser": "none"}]}).models[0]
    assert (nothing.tool_call_parser, nothing.reasoning_parser) == (None, None)


def test_every_family_names_registered_parsers_and_is_documented():
    repo = Path(__file__).resolve().parents[2]
    configuration = "".join(
        (repo / doc).read_text(encoding="utf-8") for doc in ("docs/configuration.md", "docs/peer-formats.md")
    )
    for family in FAMILIES:
        assert family.tool_call_parser in (None, *tool_call_parser_names())
        assert family.reasoning_parser in (None, *reasoning_parser_names())
        for pattern in family.patterns:
            assert f"`{pattern}`" in configuration
            assert family_of(pattern.replace("*", "x").replace("?", "x"))[1] is family, f"{pattern} is shadowed"


def test_unknown_parser_name_lists_none_as_allowed(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  - name: m\n    backend: {url: 'http://x/v1'}\n    tool_call_parser: qwen9\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert "unknown tool-call parser 'qwen9'" in str(error.value) and "none" in str(error.value)


def test_a_served_model_picked_by_name_parses_reasoning_and_calls(client, fake):
    fake.script(ONE_CALL)
    reply = client.chat.completions.create(model="qwen3-by-name", messages=MESSAGES, tools=TOOLS)
    assert message_result(reply.choices[0]) == {
        "reasoning_content": "\nI need the weather tool.\n",
        "content": None,
        "tool_calls": [("get_weather", {"city": "Paris"})],
        "finish_reason": "tool_calls",
    }
    assert fake.last_body["model"] == "Qwen/Qwen3-8B"


def test_a_model_opted_out_with_none_passes_text_through(client, fake):
    fake.script(ONE_CALL)
    reply = client.chat.completions.create(model="qwen3-opted-out", messages=MESSAGES, tools=TOOLS)
    assert reply.choices[0].message.content == ONE_CALL and not reply.choices[0].message.tool_calls


def test_cli_shows_the_pick_for_a_model():
    result = parsegate("parsers", "--for", "Qwen/Qwen3-Coder-480B-A35B-Instruct")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Qwen/Qwen3-Coder-480B-A35B-Instruct: matches 'qwen3-coder*'",
        "  tool_call_parser: qwen3_coder",
        "  reasoning_parser: none",
    ]


@pytest.mark.parametrize(("model", "tool_call_parser", "reasoning_parser"), PICKS)
def test_cli_json_pick_matches_what_serving_uses(capsys, model, tool_call_parser, reasoning_parser):
    assert main(["parsers", "--for", model, "--json"]) == 0
    pick = json.loads(capsys.readouterr().out)
    assert pick["model"] == model
    assert (pick["tool_call_parser"], pick["reasoning_parser"]) == (tool_call_parser, reasoning_parser)
    assert (pick["pattern"] is None) == (tool_call_parser is None and reasoning_parser is None)


def test_cli_says_when_nothing_matches(capsys):
    assert main(["parsers", "--for", "acme/unknown-7b"]) == 0
    assert "no pattern matches" in capsys.readouterr().out
