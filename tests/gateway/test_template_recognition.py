"""Families recognised by their markers and special tokens
(docs/derived-parsers.md, `gateway/templates/recognition.py`): each real
template in tests/fixtures/chat_templates, served from the template alone,
parses its family's real outputs (tests/cases and the corpus) as the
family's named parsers do; a fine-tune's copy of it (another system prompt,
another date, renamed loop variables, other spacing) is served by the same
parsers; a template that writes no calls (LFM2.5) is recognised from the
special tokens its tokenizer_config.json or GGUF lists."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from gateway.cli import main
from gateway.ops.config import Config
from gateway.templates.analysis import derive
from gateway.templates.chat_template import ChatTemplate
from gateway.templates.derivation import Derivation
from gateway.templates.sources import load_chat_template
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from tests.parsers.test_conformance import parse_with
from tests.scripted_backend import chat_answer
from tests.template_families import (
    FAMILY_TEMPLATES,
    LFM2_TOKENS,
    SPECIAL_TOKENS,
    TEMPLATES,
    cases_for,
    fine_tuned,
    stages,
)

SAME_AS_NAMED = 0.92  # issue 43: a family's real template, served from the template alone
TWIN_SAME_AS_NAMED = 0.85  # and a fine-tune's copy of it
LFM25 = "LFM2.5-Instruct.jinja"


def served(name: str, source: str | None = None) -> Derivation:
    text = source if source is not None else (TEMPLATES / name).read_text(encoding="utf-8")
    return derive(ChatTemplate(text, where=name, special_tokens=SPECIAL_TOKENS.get(name, ())))


def share_as_named(found: Derivation, tool: str | None, reasoning: str | None) -> float:
    """The share of the named parsers' cases the template's parsers parse as they do."""
    cases = cases_for(tool, reasoning)
    assert cases
    same = 0
    for case in cases:
        named = parse_with(case, [case["text"]], case["reasoning_parser"] and reasoning, case["tool_parser"] and tool)
        same += parse_with(case, [case["text"]], *stages(found, case)) == named
    return same / len(cases)


def stage_names(found: Derivation) -> tuple:
    """The parsers served: registered names, or `derived` for a format built from markers."""
    return tuple(
        "derived" if isinstance(stage, ToolFormat | ReasoningFormat) else stage
        for stage in (found.tool_stage(), found.reasoning_stage())
    )


@pytest.mark.parametrize("name", sorted(FAMILY_TEMPLATES))
def test_a_real_template_parses_its_familys_outputs_as_its_named_parsers(name: str) -> None:
    family, tool, reasoning = FAMILY_TEMPLATES[name]
    share = share_as_named(served(name), tool, reasoning)
    assert share >= SAME_AS_NAMED, f"{family}: {share:.1%} of {tool}/{reasoning}'s cases parsed as they do"


@pytest.mark.parametrize("name", sorted(FAMILY_TEMPLATES))
def test_a_fine_tuned_copy_is_served_by_the_same_parsers(name: str) -> None:
    family, tool, reasoning = FAMILY_TEMPLATES[name]
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    twin_source = fine_tuned(source)
    assert twin_source != source
    original, twin = served(name), served(name, twin_source)
    assert stage_names(twin) == stage_names(original), twin.refusals
    assert share_as_named(twin, tool, reasoning) >= TWIN_SAME_AS_NAMED, family


@pytest.mark.parametrize(
    ("name", "family", "tool", "reasoning"),
    [
        ("google-gemma-4-31B-it.jinja", "Gemma 4", "gemma4", "gemma4"),
        ("openai-gpt-oss-120b.jinja", "gpt-oss (Harmony)", "gpt-oss", "gpt-oss"),
        ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "DeepSeek R1", "deepseekv3", "deepseek-r1"),
        ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "Command R7B", "command_r7b", "command_r7b"),
        ("LFM2-8B-A1B.jinja", "LFM2", "lfm2", None),
        ("LFM2.5-8B-A1B.jinja", "LFM2 thinking", "lfm2", "lfm2"),
        ("Kimi-K3.jinja", "Kimi K3 (XTML)", "kimi_k3", "kimi_k3"),
        ("muse-glimmer.jinja", "Muse Glimmer", "muse", "muse"),
        ("MiniMax-M1.jinja", "MiniMax M1", "minimax", "minimax"),
        ("MiniMax-M2.jinja", "MiniMax M2", "minimax-m2", "minimax"),
        ("MiniMax-M3.jinja", "MiniMax M3", "minimax-m3", "minimax-m3"),
        ("tencent-Hy3.jinja", "Hunyuan Hy3", "hunyuan", "hunyuan"),
        ("poolside-Laguna-XS.2.jinja", "Poolside Laguna", "poolside_v1", "poolside_v1"),
        ("poolside-Laguna-S-2.1.jinja", "Poolside Laguna", "poolside_v1", "poolside_v1"),
        ("Cohere2MoE.jinja", "Command 4", "cohere_command4", "cohere_command4"),
        ("GigaChat3.5.jinja", "GigaChat 3.5", "gigachat35", "gigachat35"),
        ("openbmb-MiniCPM5-1B.jinja", "MiniCPM 5", "minicpm5", "minicpm5"),
    ],
)
def test_a_family_is_recognised_by_its_markers(name: str, family: str, tool: str, reasoning: str | None) -> None:
    found = derive(load_chat_template(TEMPLATES / name))
    assert (found.recognised_tools, found.recognised_reasoning) == (tool, reasoning), found.refusals
    assert found.tools_from is not None and found.tools_from.startswith(f"{family} (markers in the template: ")
    assert found.origin == f"template: recognised as {'+'.join(dict.fromkeys(n for n in (tool, reasoning) if n))}"


def test_a_hy3_revision_with_another_checkpoint_suffix_is_recognised_and_reads_its_calls() -> None:
    # Hy3's tokens carry the checkpoint's suffix (`<tool_call:opensource>`); another
    # checkpoint's copy writes another one, or none
    source = (TEMPLATES / "tencent-Hy3.jinja").read_text(encoding="utf-8")
    for suffix in (":preview", ""):
        revision = source.replace("{%- set HYTK = ':opensource' %}", "{%- set HYTK = '" + suffix + "' %}")
        assert revision != source
        found = served("tencent-Hy3.jinja", revision)
        assert (found.recognised_tools, found.recognised_reasoning) == ("hunyuan", "hunyuan"), found.refusals
        assert found.refusals == []
        assert share_as_named(found, "hunyuan", "hunyuan") == 1.0


def test_command_4_is_told_from_command_r7b_by_its_text_markers() -> None:
    # both write `<|START_THINKING|>` and `<|START_ACTION|>`; Command 4 answers in
    # `<|START_TEXT|>`, R7B in `<|START_RESPONSE|>`
    command4 = served("Cohere2MoE.jinja")
    r7b = served("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")
    assert stage_names(command4) == ("cohere_command4", "cohere_command4")
    assert stage_names(r7b) == ("command_r7b", "command_r7b")


def test_a_model_that_always_reasons_has_its_calls_read_by_its_familys_parser() -> None:
    # MiniMax M1 and M2 close their reasoning before their calls, which the
    # templates' history does not write; the family's parsers read the calls
    for name in ("MiniMax-M1.jinja", "MiniMax-M2.jinja"):
        found = served(name)
        assert found.refusals == [], name
        assert found.tools_from is not None and found.tools_from.startswith("MiniMax M")


def _tokenizer_config(folder: Path, tokens: tuple[str, ...]) -> Path:
    """LFM2.5's template in a tokenizer_config.json listing `tokens` as
    special, ids as LiquidAI's tokenizer numbers them (6-13)."""
    config = {
        "chat_template": (TEMPLATES / LFM25).read_text(encoding="utf-8"),
        "bos_token": "<|startoftext|>",
        "eos_token": "<|im_end|>",
        "added_tokens_decoder": {
            str(6 + index): {"content": token, "special": True} for index, token in enumerate(tokens)
        },
    }
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_a_template_writing_no_calls_is_recognised_from_its_tokenizers_special_tokens(tmp_path: Path) -> None:
    found = derive(load_chat_template(_tokenizer_config(tmp_path, LFM2_TOKENS)))
    assert found.recognised_tools == "lfm2"
    assert found.tools_from == "LFM2 (special tokens: <|tool_call_start|>, <|tool_call_end|>)"
    without = tmp_path / "without"
    without.mkdir()
    plain = derive(load_chat_template(_tokenizer_config(without, ("<|im_start|>", "<|im_end|>"))))
    assert plain.found_nothing
    assert "the template writes no tool calls in an assistant turn" in plain.refusals


def test_a_ggufs_control_tokens_are_its_special_tokens(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "lfm2.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_chat_template((TEMPLATES / LFM25).read_text(encoding="utf-8"))
    words = ["<|startoftext|>", "<|tool_call_start|>", "<|tool_call_end|>", "hello"]
    writer.add_token_list(words)
    writer.add_token_types([gguf.TokenType.CONTROL] * 3 + [gguf.TokenType.NORMAL])
    writer.add_bos_token_id(0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    template = load_chat_template(path)
    assert template.special_tokens == frozenset(words[:3])
    assert derive(template).recognised_tools == "lfm2"


def test_a_familys_markers_do_not_serve_calls_its_parser_cannot_read_back() -> None:
    # Gemma 4's call markers around Hermes-style JSON calls: the gemma4 parser
    # does not read them back, so the calls are derived from the renders instead
    source = (
        "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
        '<|tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}<tool_call|>'
        "{% endfor %}{% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}"
    )
    found = derive(ChatTemplate(source, where="odd"))
    assert found.recognised_tools is None
    assert (
        "tool calls: not as gemma4: Gemma 4 (markers in the template: <|tool_call>, <tool_call|>), "
        "but it does not read the template's calls back"
    ) in found.refusals
    assert found.origin == "template: derived"
    assert found.tools is not None and (found.tools.call_start, found.tools.call_end) == (
        "<|tool_call>",
        "<tool_call|>",
    )


def test_parsers_derive_says_per_part_recognised_derived_or_refused(capsys, tmp_path: Path) -> None:
    assert main(["parsers", "--derive", str(_tokenizer_config(tmp_path, LFM2_TOKENS))]) == 0
    printed = capsys.readouterr().out
    assert (
        "  tool_calls: recognised as lfm2, by LFM2 (special tokens: <|tool_call_start|>, <|tool_call_end|>)\n"
        "  reasoning: refused: the template writes no reasoning markers\n"
    ) in printed
    assert main(["parsers", "--derive", str(TEMPLATES / "google-gemma-4-31B-it.jinja"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    markers = "Gemma 4 (markers in the template: <|tool_call>, <tool_call|>)"
    assert report["parts"] == {
        "tool_calls": {"status": "recognised", "parser": "gemma4", "from": markers},
        "reasoning": {"status": "recognised", "parser": "gemma4", "from": markers},
    }
    assert report["recognised"] == {"tool_call_parser": "gemma4", "reasoning_parser": "gemma4"}
    assert report["recognised_from"] == {"tool_call_parser": markers, "reasoning_parser": markers}


def test_parsers_derive_names_the_family_and_its_markers_for_a_newer_family(capsys) -> None:
    assert main(["parsers", "--derive", str(TEMPLATES / "Kimi-K3.jinja")]) == 0
    printed = capsys.readouterr().out
    markers = "Kimi K3 (XTML) (markers in the template: <|open|>, <|close|>, <|sep|>)"
    assert "Kimi-K3.jinja: template: recognised as kimi_k3\n" in printed
    assert f"  tool_calls: recognised as kimi_k3, by {markers}\n" in printed
    assert f"  reasoning: recognised as kimi_k3, by {markers}\n" in printed


def test_models_served_from_their_templates_alone_parse_their_calls(serve, side, tmp_path: Path) -> None:
    _tokenizer_config(tmp_path, LFM2_TOKENS)  # the folder is the source, as a model's download is
    models = [
        {"name": "lfm", "backend": {"url": f"{side.url}/v1"}, "parsers_from": str(tmp_path)},
        {
            "name": "gemma",
            "backend": {"url": f"{side.url}/v1"},
            "parsers_from": str(TEMPLATES / "google-gemma-4-31B-it.jinja"),
        },
    ]
    url = serve(create_app(Config.model_validate({"models": models})))
    listed = {model["id"]: model["parsers"] for model in httpx.get(f"{url}/v1/models").json()["data"]}
    assert listed["lfm"] == {
        "reasoning_parser": None,
        "tool_call_parser": "lfm2",
        "origin": "template: recognised as lfm2",
    }
    assert listed["gemma"]["origin"] == "template: recognised as gemma4"
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    for model, reply in (
        ("lfm", '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>'),
        ("gemma", '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'),
    ):
        side.routes["/v1/chat/completions"] = chat_answer(reply)
        body = {"model": model, "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": tools}
        message = httpx.post(f"{url}/v1/chat/completions", json=body).json()["choices"][0]["message"]
        assert [
            (call["function"]["name"], json.loads(call["function"]["arguments"])) for call in message["tool_calls"]
        ] == [("get_weather", {"city": "Paris"})], model
