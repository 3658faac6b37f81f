"""Where chat templates are read from: .jinja, tokenizer_config.json, .gguf."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gateway.templates.chat_template import ChatTemplateError
from gateway.templates.sources import load_chat_template

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN3 = (FIXTURES / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
USER = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
WHICH = "{{ bos_token }}|{{ eos_token }}|"


def _write_config(folder: Path, **config: object) -> Path:
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_jinja_file_with_tokens_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(WHICH + "{{ messages[0].content }}", encoding="utf-8")
    assert load_chat_template(path).render(USER) == "||hi"
    assert load_chat_template(path, bos_token="<s>", eos_token="</s>").render(USER) == "<s>|</s>|hi"


def test_tokenizer_config_string_template_and_token_objects(tmp_path: Path) -> None:
    path = _write_config(
        tmp_path,
        chat_template=QWEN3,
        bos_token=None,
        eos_token={"__type": "AddedToken", "content": "<|im_end|>", "lstrip": False},
    )
    template = load_chat_template(path)
    assert (template.bos_token, template.eos_token) == (None, "<|im_end|>")
    assert template.render(USER) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert template.stop_texts() == ["<|im_end|>"]


def test_tokenizer_config_list_form_picks_tool_use_with_tools(tmp_path: Path) -> None:
    path = _write_config(
        tmp_path,
        chat_template=[
            {"name": "default", "template": "default:" + WHICH},
            {"name": "tool_use", "template": "tool_use:" + WHICH},
        ],
        bos_token="<s>",
        eos_token="</s>",
    )
    template = load_chat_template(path)
    assert template.render(USER) == "default:<s>|</s>|"
    assert template.render(USER, tools=TOOLS) == "tool_use:<s>|</s>|"
    assert template.render(USER, tools=[]) == "default:<s>|</s>|"


def test_tokenizer_config_list_form_needs_a_default(tmp_path: Path) -> None:
    path = _write_config(tmp_path, chat_template=[{"name": "tool_use", "template": "x"}])
    with pytest.raises(ChatTemplateError, match="no template named 'default'"):
        load_chat_template(path)


def test_chat_template_jinja_beside_the_config_wins(tmp_path: Path) -> None:
    _write_config(tmp_path, chat_template="from the config", bos_token="<s>")
    (tmp_path / "chat_template.jinja").write_text("from the file {{ bos_token }}", encoding="utf-8")
    assert load_chat_template(tmp_path / "tokenizer_config.json").render(USER) == "from the file <s>"
    assert load_chat_template(tmp_path).render(USER) == "from the file <s>"


def test_overrides_replace_the_configs_tokens(tmp_path: Path) -> None:
    path = _write_config(tmp_path, chat_template=WHICH, bos_token="<s>", eos_token="</s>")
    assert load_chat_template(path, eos_token="<|eot|>").render(USER) == "<s>|<|eot|>|"


def _write_gguf(path: Path, template: str | list | None, tokens: list[str]) -> Path:
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), arch="llama")
    if template is not None:
        writer.add_chat_template(template)
    writer.add_token_list(tokens)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_template_and_special_tokens(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "m.gguf", WHICH + "{{ messages[0].content }}", ["<unk>", "<s>", "</s>"])
    template = load_chat_template(path)
    assert (template.bos_token, template.eos_token) == ("<s>", "</s>")
    assert template.render(USER) == "<s>|</s>|hi"
    assert template.strip_bos(template.render(USER)) == "|</s>|hi"


def test_gguf_named_templates(tmp_path: Path) -> None:
    named = [
        {"name": "default", "template": "default"},
        {"name": "tool_use", "template": "tool_use"},
    ]
    template = load_chat_template(_write_gguf(tmp_path / "m.gguf", named, ["a", "b", "c"]))
    assert template.render(USER) == "default"
    assert template.render(USER, tools=TOOLS) == "tool_use"


def test_gguf_without_template(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "m.gguf", None, ["a", "b", "c"])
    with pytest.raises(ChatTemplateError) as caught:
        load_chat_template(path)
    assert str(caught.value) == f"{path}: the GGUF has no tokenizer.chat_template"


def test_not_a_gguf(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"not a gguf at all")
    with pytest.raises(ChatTemplateError, match=f"^{re.escape(str(path))}: not a readable GGUF file"):
        load_chat_template(path)


@pytest.mark.parametrize("name", ["missing.jinja", "missing.gguf", "tokenizer_config.json"])
def test_missing_file(tmp_path: Path, name: str) -> None:
    with pytest.raises(ChatTemplateError) as caught:
        load_chat_template(tmp_path / name)
    assert str(caught.value) == f"{tmp_path / name}: no such file"


def test_template_that_does_not_compile(tmp_path: Path) -> None:
    path = tmp_path / "broken.jinja"
    path.write_text("{% for m in messages %}{{ m.content }}", encoding="utf-8")
    with pytest.raises(ChatTemplateError) as caught:
        load_chat_template(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: the chat template does not compile: ")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"bos_token": "<s>"}', "no chat_template in the tokenizer config"),
        ('{"chat_template": [{"name": "default"}]}', "chat_template list entries"),
    ],
)
def test_bad_tokenizer_configs(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ChatTemplateError, match=f"^{re.escape(str(path))}: {problem}"):
        load_chat_template(path)
