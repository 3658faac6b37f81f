"""Hunyuan Hy3 through the real gateway with the official `openai` client:
suffixed special tokens (`<think:opensource>`, `<tool_calls:opensource>`)
split like bare ones (and a stray one in content is written bare), and
the reasoning effort decides whether a reply
starts inside reasoning, streamed as not."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_gateway_formats import streamed
from tests.gateway.test_reasoning_fields import reply
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    },
}
SUFFIXED_CALL = (
    "<think:opensource>Need the weather.</think:opensource>Checking.\n"
    "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
    "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n"
    "<arg_key:opensource>days</arg_key:opensource>\n<arg_value:opensource>2</arg_value:opensource>\n"
    "</tool_call:opensource>\n</tool_calls:opensource><｜hy_eos:opensource｜>"
)
PREFILLED = "Short plan.</think:opensource>Sunny.<｜hy_eos:opensource｜>"


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    model = {
        "name": "hy3",
        "backend": {"url": f"{fake_url}/v1"},
        "reasoning_parser": "hunyuan",
        "tool_call_parser": "hunyuan",
    }
    url = serve(create_app(Config.model_validate({"models": [model]})))
    return openai_client(url)


@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
def test_suffixed_tokens_give_reasoning_and_typed_calls(client, fake, chunk_size):
    fake.script(SUFFIXED_CALL, chunk_size=chunk_size)
    message = client.chat.completions.create(model="hy3", messages=MESSAGES, tools=[WEATHER]).choices[0].message
    assert (message.reasoning_content, message.content) == ("Need the weather.", "Checking.\n")
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("get_weather", '{"city": "Paris", "days": 2}')
    ]
    assert fake.last_body["skip_special_tokens"] is False
    fake.script(SUFFIXED_CALL, chunk_size=chunk_size)
    reasoning, content, calls, finish = streamed(client, model="hy3", messages=MESSAGES, tools=[WEATHER])
    assert (reasoning, content, finish) == ("Need the weather.", "Checking.\n", "tool_calls")
    assert [(name, arguments) for _, name, arguments in calls] == [("get_weather", '{"city": "Paris", "days": 2}')]


def test_without_an_effort_the_reply_starts_outside_reasoning(client, fake):
    assert reply(client, fake, PREFILLED, model="hy3") == (None, "Short plan.</think>Sunny.")


@pytest.mark.parametrize(
    "request_fields",
    [{"reasoning_effort": "high"}, {"extra_body": {"chat_template_kwargs": {"reasoning_effort": "low"}}}],
    ids=["reasoning_effort", "chat_template_kwargs.reasoning_effort"],
)
def test_an_effort_means_the_template_prefilled_the_think_token(client, fake, request_fields):
    assert reply(client, fake, PREFILLED, model="hy3", **request_fields) == ("Short plan.", "Sunny.")


NO_THINK = {"reasoning_effort": "none", "enable_thinking": True}


@pytest.mark.parametrize(
    ("request_fields", "upstream_kwargs"),
    [
        ({"reasoning_effort": "no_think"}, {"thinking": False, "enable_thinking": False}),
        ({"extra_body": {"chat_template_kwargs": NO_THINK}}, NO_THINK),
    ],
    ids=["reasoning_effort", "chat_template_kwargs.reasoning_effort"],
)
def test_no_think_turns_thinking_off(client, fake, request_fields, upstream_kwargs):
    assert reply(client, fake, "Sunny.</think:opensource>", model="hy3", **request_fields) == (None, "Sunny.</think>")
    assert fake.last_body["chat_template_kwargs"] == upstream_kwargs


@pytest.mark.parametrize("model", ["tencent/Hy3", "tencent/Hy3-preview", "tencent/Hy4-Instruct"])
def test_hunyuan_models_get_both_parsers_from_their_name(model):
    entry = Config.model_validate(
        {"models": [{"name": "m", "backend": {"url": "http://127.0.0.1:9/v1", "model": model}}]}
    ).models[0]
    assert (entry.tool_call_parser, entry.reasoning_parser) == ("hunyuan", "hunyuan")
