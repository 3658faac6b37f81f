"""docs/configuration.md, "Launching the backend server": each server's
launch line leaves its own parsing off, and each model entry beside it is a
config the gateway accepts, naming that server."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from gateway.ops.config import Config
from tests.e2e.llama import RAW_TEXT_ARGS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Launching the backend server", 1)[1].split("\n## ", 1)[0]
# Each server's paragraph: from its bold name to the next one.
PARAGRAPHS = dict(re.findall(r"\*\*(vLLM|SGLang|llama\.cpp|Ollama)\*\*(.*?)(?=\n\*\*|\Z)", SECTION, re.DOTALL))
PARSER_FLAGS = {
    "vLLM": ("--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser"),
    "SGLang": ("--tool-call-parser", "--reasoning-parser"),
}
SERVER_KIND = {"vLLM": "vllm", "SGLang": "sglang", "llama.cpp": "llamacpp", "Ollama": "other"}


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def launch_words(server: str) -> list[str]:
    (command,) = blocks(PARAGRAPHS[server], "bash")[:1]
    return shlex.split(command.replace("\\\n", " ").splitlines()[0])


def test_every_server_has_a_paragraph():
    assert sorted(PARAGRAPHS) == sorted(SERVER_KIND)


@pytest.mark.parametrize("server", sorted(PARSER_FLAGS))
def test_the_launch_line_turns_no_parser_on(server):
    words = launch_words(server)
    assert words[:2] in (["vllm", "serve"], ["python", "-m"])
    assert [word for word in words if word.startswith(PARSER_FLAGS[server])] == []


def test_llama_server_starts_as_the_end_to_end_tests_start_it():
    words = launch_words("llama.cpp")
    assert words[0] == "llama-server" and "--jinja" in words
    assert " ".join(RAW_TEXT_ARGS) in " ".join(words)


@pytest.mark.parametrize("server", sorted(SERVER_KIND))
def test_the_model_entries_are_valid_configs_naming_the_server(server, tmp_path):
    template = tmp_path / "templates" / "Qwen3-8B" / "tokenizer_config.json"
    template.parent.mkdir(parents=True)
    template.write_text('{"chat_template": "{{ messages }}"}')
    (entry,) = blocks(PARAGRAPHS[server], "yaml")
    config = Config.model_validate(yaml.safe_load(entry), context={"config_dir": tmp_path})
    assert {model.backend.server for model in config.models} == {SERVER_KIND[server]}
