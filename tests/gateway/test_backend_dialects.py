"""Per-model backend dialects, seen from the client and from the backend:
`keep_special_tokens` and `extra_body`."""

from __future__ import annotations

import pytest
import yaml

from gateway.ops.config import Config, ConfigError, load_config
from tests.gateway.test_gateway_e2e import MESSAGES, TOOLS

KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)


def test_keep_special_tokens_true_asks_the_backend_even_without_parsers(client, fake):
    client.chat.completions.create(model="special-tokens-on", messages=MESSAGES)
    assert fake.last_body["skip_special_tokens"] is False


def test_keep_special_tokens_false_never_asks_even_when_the_parsers_would(client, fake):
    fake.script(KIMI_CALL)
    reply = client.chat.completions.create(model="kimi-special-tokens-off", messages=MESSAGES, tools=TOOLS)
    assert "skip_special_tokens" not in fake.last_body
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_extra_body_fills_in_what_the_client_did_not_send(client, fake):
    fake.script("Thought it over.</think>Sunny.")
    reply = client.chat.completions.create(model="qwen3-thinking-on", messages=MESSAGES, temperature=0.5)
    assert fake.last_body["top_k"] == 20 and fake.last_body["temperature"] == 0.5
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": True, "custom": "x"}
    assert fake.last_body["model"] == "fake-qwen3"
    # the config turned thinking on, so the parser starts inside reasoning
    assert reply.choices[0].message.reasoning_content == "Thought it over."
    assert reply.choices[0].message.content == "Sunny."


def test_request_fields_win_over_extra_body_key_by_key(client, fake):
    fake.script("No thinking.</think>Sunny.")
    reply = client.chat.completions.create(
        model="qwen3-thinking-on",
        messages=MESSAGES,
        stream=True,
        extra_body={"top_k": 5, "chat_template_kwargs": {"enable_thinking": False}},
    )
    deltas = [chunk.choices[0].delta for chunk in reply if chunk.choices]
    assert fake.last_body["top_k"] == 5
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": False, "custom": "x"}
    assert not any(getattr(delta, "reasoning_content", None) for delta in deltas)
    assert "".join(delta.content or "" for delta in deltas) == "No thinking.</think>Sunny."


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"extra_body": {"model": "other"}}, "models[0].extra_body: 'model' cannot be set here"),
        ({"extra_body": {"stream": True}}, "models[0].extra_body: 'stream' cannot be set here"),
        ({"extra_body": {"chat_template_kwargs": "x"}}, "'chat_template_kwargs' must be a mapping"),
        ({"extra_body": ["top_k", 20]}, "models[0].extra_body: Input should be a valid dictionary"),
        ({"keep_special_tokens": "yes"}, "models[0].keep_special_tokens: Input should be a valid boolean"),
    ],
)
def test_bad_dialect_settings_stop_start_up(tmp_path, entry, message):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "m", "backend": {"url": "http://127.0.0.1:9/v1"}, **entry}]}))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert message in str(error.value)


def test_dialect_settings_are_optional():
    model = Config.model_validate({"models": [{"name": "m", "backend": {"url": "http://x/v1"}}]}).models[0]
    assert model.keep_special_tokens is None and model.extra_body == {}
