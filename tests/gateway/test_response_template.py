"""A model entry with `response_template:` through the real gateway and the
openai SDK: the same result as transformers' parse_response, streamed and
not, at every chunk size; config errors name the model and the file; the
guarantees the format cannot enforce are refused with a 400."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from transformers.utils import chat_parsing

from gateway.app import create_app
from gateway.ops.config import ConfigError, load_config
from tests.response_templates import NAMED, NAMED_OUTPUTS, QWEN3, QWEN3_OUTPUTS, QWEN35, QWEN35_OUTPUTS, TOOLS
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Weather?"}]
CASES = (
    [("qwen-rt", QWEN3, text) for text in QWEN3_OUTPUTS]
    + [("named-rt", NAMED, text) for text in NAMED_OUTPUTS]
    + [("qwen35-rt", QWEN35, text) for text in QWEN35_OUTPUTS]
)


def write_config(folder: Path, backend_url: str, **extra: object) -> Path:
    (folder / "qwen").mkdir(exist_ok=True)
    (folder / "qwen" / "tokenizer_config.json").write_text(json.dumps({"response_template": QWEN3}))
    (folder / "named.json").write_text(json.dumps(NAMED))
    (folder / "qwen35.json").write_text(json.dumps({"response_template": QWEN35}))
    models = [
        {"name": "qwen-rt", "backend": {"url": backend_url}, "response_template": "qwen/tokenizer_config.json"},
        {"name": "qwen35-rt", "backend": {"url": backend_url}, "response_template": "qwen35.json"},
        {"name": "named-rt", "backend": {"url": backend_url}, "response_template": "named.json", **extra},
    ]
    path = folder / "config.yaml"
    path.write_text(json.dumps({"models": models}))
    return path


@pytest.fixture(scope="module")
def client(tmp_path_factory, serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    config = load_config(write_config(tmp_path_factory.mktemp("rt"), f"{fake_url}/v1"))
    url = serve(create_app(config))
    return openai_client(url)


def expected(template: dict, text: str) -> tuple:
    message = chat_parsing.parse_response(text, template, prefix="", tools=TOOLS)
    calls = [(call["function"]["name"], call["function"]["arguments"]) for call in message.get("tool_calls", [])]
    return message.get("reasoning_content"), message.get("content"), calls


@pytest.mark.parametrize(("model", "template", "text"), CASES)
def test_whole_and_streamed_equal_transformers(client, fake, model: str, template: dict, text: str) -> None:
    want = expected(template, text)
    for chunk_size in (1, 2, 3, 5, 8, 13, len(text)):
        fake.script(text, chunk_size=chunk_size)
        reply = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS)
        message = reply.choices[0].message
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]
        assert (message.reasoning_content, message.content or None, calls) == want  # no text: ""
        assert reply.choices[0].finish_reason == ("tool_calls" if calls else "stop")

        fake.script(text, chunk_size=chunk_size)
        reasoning, content, streamed_calls, finish = "", "", {}, None
        for chunk in client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, stream=True):
            for choice in chunk.choices:
                reasoning += getattr(choice.delta, "reasoning_content", None) or ""
                content += choice.delta.content or ""
                for call in choice.delta.tool_calls or ():
                    streamed_calls.setdefault(call.index, [call.function.name, ""])[1] += call.function.arguments or ""
                finish = choice.finish_reason or finish
        calls = [(name, json.loads(args)) for name, args in (streamed_calls[i] for i in sorted(streamed_calls))]
        assert (reasoning or None, content or None, calls) == want, chunk_size
        assert finish == ("tool_calls" if calls else "stop")


def test_the_backend_is_asked_to_keep_the_markers(client, fake) -> None:
    fake.script(NAMED_OUTPUTS[0])
    client.chat.completions.create(model="named-rt", messages=MESSAGES, tools=TOOLS)
    assert fake.last_body["skip_special_tokens"] is False


@pytest.mark.parametrize(
    ("request_fields", "param", "reason"),
    [
        ({"tool_choice": "required"}, "tool_choice", "tool_choice 'required' is not supported"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            "tool_choice",
            "tool_choice naming a function is not supported",
        ),
        ({"parallel_tool_calls": False}, "parallel_tool_calls", "parallel_tool_calls false is not supported"),
        (
            {"tools": [{**TOOLS[0], "function": {**TOOLS[0]["function"], "strict": True}}]},
            "tools",
            "strict tools are not supported",
        ),
    ],
)
def test_guarantees_the_format_cannot_enforce_are_400(client, fake, request_fields, param, reason) -> None:
    fake.script(QWEN3_OUTPUTS[0])
    request = {"model": "qwen-rt", "messages": MESSAGES, "tools": TOOLS, **request_fields}
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(**request)
    error = raised.value.body
    assert reason in error["message"] and "response_template" in error["message"]
    assert error["param"] == param


def test_a_template_that_cannot_stream_is_refused_at_load_naming_model_and_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "http://127.0.0.1:9/v1")
    broken = {
        **NAMED,
        "fields": {**NAMED["fields"], "tool_calls": {**NAMED["fields"]["tool_calls"], "content": "kv-lines"}},
    }
    (tmp_path / "named.json").write_text(json.dumps(broken))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "model 'named-rt'" in message and str(tmp_path / "named.json") in message
    assert "content 'kv-lines' cannot be streamed" in message


def test_a_missing_or_unreadable_template_file_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path, "http://127.0.0.1:9/v1")
    (tmp_path / "named.json").unlink()
    with pytest.raises(ConfigError, match=r"model 'named-rt': response_template .*named\.json: no such file"):
        load_config(path)
    (tmp_path / "named.json").write_text("{not json")
    with pytest.raises(ConfigError, match="named.json: not valid JSON"):
        load_config(path)
    (tmp_path / "named.json").write_text(json.dumps({"chat_template": "x"}))
    with pytest.raises(ConfigError, match="named.json: no response_template in the file"):
        load_config(path)


def test_parser_names_beside_a_response_template_are_an_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "http://127.0.0.1:9/v1", tool_call_parser="qwen25")
    with pytest.raises(
        ConfigError, match="model 'named-rt': response_template and tool_call_parser cannot be combined"
    ):
        load_config(path)
