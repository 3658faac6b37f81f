"""Reasoning on the way out (the field name per model) and the reasoning
switches on the way in (`reasoning_effort`, `reasoning: {effort}`), through
the real gateway with the official `openai` client."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config, ConfigError, load_config
from tests.gateway.test_gateway_e2e import MESSAGES, THINK_THEN_ANSWER
from tests.sdk_clients import openai_client


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1"}
    models = [
        {"name": f"qwen3-{field}", "backend": backend, "reasoning_parser": "qwen3", "reasoning_field": field}
        for field in ("reasoning_content", "reasoning", "both")
    ]
    models += [
        {"name": "deepseek", "backend": backend, "reasoning_parser": "deepseek-v3"},
        {"name": "r1", "backend": backend, "reasoning_parser": "deepseek-r1"},
        {"name": "magistral", "backend": backend, "reasoning_parser": "mistral"},
        {
            "name": "qwen3-thinking-by-config",
            "backend": backend,
            "reasoning_parser": "qwen3",
            "extra_body": {"chat_template_kwargs": {"enable_thinking": True, "custom": "x"}},
        },
    ]
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(url)


def reasoning_fields(client, fake, text: str, **request) -> tuple[dict, dict]:
    """The message's reasoning fields, and the streamed deltas' joined per field."""
    fake.script(text, chunk_size=3)
    message = client.chat.completions.create(messages=MESSAGES, **request).choices[0].message.to_dict()
    streamed: dict[str, str] = {}
    for chunk in client.chat.completions.create(messages=MESSAGES, stream=True, **request):
        for choice in chunk.choices:
            for key, value in choice.delta.to_dict().items():
                if key.startswith("reasoning") and value:
                    streamed[key] = streamed.get(key, "") + value
    whole = {key: value for key, value in message.items() if key.startswith("reasoning")}
    return whole, streamed


@pytest.mark.parametrize(
    ("field", "keys"),
    [
        ("reasoning_content", ["reasoning_content"]),
        ("reasoning", ["reasoning"]),
        ("both", ["reasoning_content", "reasoning"]),
    ],
)
def test_the_reasoning_field_name_is_chosen_per_model(client, fake, field, keys):
    whole, streamed = reasoning_fields(client, fake, THINK_THEN_ANSWER, model=f"qwen3-{field}")
    expected = dict.fromkeys(keys, "\nThe user asks about Paris.\n")
    assert whole == expected and streamed == expected


def test_an_unknown_reasoning_field_stops_start_up(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n  - name: m\n    backend: {url: 'http://127.0.0.1:9/v1'}\n    reasoning_field: thoughts\n"
    )
    with pytest.raises(ConfigError, match=r"models\[0\]\.reasoning_field.*'reasoning_content', 'reasoning' or 'both'"):
        load_config(path)


def reply(client, fake, text: str, **request) -> tuple[str | None, str | None]:
    """(reasoning, content) of the reply, checked equal streamed and not."""
    fake.script(text, chunk_size=2)
    message = client.chat.completions.create(messages=MESSAGES, **request).choices[0].message
    whole = (getattr(message, "reasoning_content", None), message.content or None)
    reasoning, content = "", ""
    for chunk in client.chat.completions.create(messages=MESSAGES, stream=True, **request):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            content += choice.delta.content or ""
    assert (reasoning or None, content or None) == whole
    return whole


def test_reasoning_effort_none_turns_thinking_off(client, fake):
    answer = "Paris is sunny.</think> really."
    assert reply(client, fake, answer, model="qwen3-reasoning_content") == ("Paris is sunny.", " really.")
    off = reply(client, fake, answer, model="qwen3-reasoning_content", reasoning_effort="none")
    assert off == (None, answer)  # the reply starts outside reasoning
    assert fake.last_body["chat_template_kwargs"] == {"thinking": False, "enable_thinking": False}
    assert fake.last_body["reasoning_effort"] == "none"


@pytest.mark.parametrize(
    "request_fields",
    [
        {"reasoning_effort": "high"},
        {"extra_body": {"reasoning": {"effort": "low"}}},
        {"extra_body": {"reasoning": {"enabled": True}}},
    ],
    ids=["reasoning_effort", "reasoning.effort", "reasoning.enabled"],
)
def test_an_effort_turns_thinking_on_for_a_model_off_by_default(client, fake, request_fields):
    text = "Let me think.</think>Answer."
    assert reply(client, fake, text, model="deepseek") == (None, text)
    assert reply(client, fake, text, model="deepseek", **request_fields) == ("Let me think.", "Answer.")
    assert fake.last_body["chat_template_kwargs"] == {"thinking": True, "enable_thinking": True}


def test_the_clients_own_template_switch_wins(client, fake):
    kwargs = {"chat_template_kwargs": {"enable_thinking": False, "custom": 1}}
    text = "No thinking here.</think>"
    result = reply(client, fake, text, model="qwen3-reasoning_content", reasoning_effort="high", extra_body=kwargs)
    assert result == (None, text)
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": False, "custom": 1, "thinking": True}


def test_an_always_thinking_model_ignores_effort_none(client, fake):
    assert reply(client, fake, "Hmm.</think>Yes.", model="r1", reasoning_effort="none") == ("Hmm.", "Yes.")


def test_a_clients_effort_wins_over_the_configs_thinking_switch(client, fake):
    text = "No thinking here.</think>"
    result = reply(client, fake, text, model="qwen3-thinking-by-config", reasoning_effort="none")
    assert result == (None, text)
    assert fake.last_body["chat_template_kwargs"] == {"thinking": False, "enable_thinking": False, "custom": "x"}


def test_a_reply_that_is_all_reasoning_comes_as_content_when_asked(client, fake):
    forced = {"chat_template_kwargs": {"force_nonempty_content": True}}
    text = "<think>Paris is in France.</think>"
    assert reply(client, fake, text, model="qwen3-reasoning_content") == ("Paris is in France.", None)
    assert reply(client, fake, text, model="qwen3-reasoning_content", extra_body=forced) == (
        None,
        "Paris is in France.",
    )
    answered = "<think>Paris.</think>It is sunny."
    assert reply(client, fake, answered, model="qwen3-reasoning_content", extra_body=forced) == (
        "Paris.",
        "It is sunny.",
    )


def test_magistral_thinks_when_a_reasoning_effort_is_set(client, fake):
    text = "Let me think.[/THINK]Answer."
    assert reply(client, fake, text, model="magistral") == (None, text)
    assert reply(client, fake, text, model="magistral", reasoning_effort="medium") == ("Let me think.", "Answer.")
    assert fake.last_body["skip_special_tokens"] is False
