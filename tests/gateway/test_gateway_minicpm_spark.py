"""MiniCPM 4/5 and Spark 2.5 calls through the real gateway with the
official `openai` client, streamed and not, at any chunking: MiniCPM's
plain-text element naming a function the request does not offer stays
content, and Spark's `null` value is null for a string parameter."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_gateway_formats import streamed
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    },
}
UNOFFERED = '<function name="get_time"><param name="zone">UTC</param></function>'
MINICPM_REPLY = f'Checking.\n{UNOFFERED}\n<function name="get_weather"><param name="city"><![CDATA[Paris]]></param><param name="days">2</param></function>'
SPARK_REPLY = "Hi.<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>NULL</arg_value><arg_key>days</arg_key><arg_value>2</arg_value>\n</tool_call>"


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1"}
    models = [{"name": name, "backend": backend, "tool_call_parser": name} for name in ("minicpm5", "spark25")]
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(url)


@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
@pytest.mark.parametrize(
    ("model", "text", "content", "arguments"),
    [
        ("minicpm5", MINICPM_REPLY, f"Checking.\n{UNOFFERED}\n", '{"city": "Paris", "days": 2}'),
        ("spark25", SPARK_REPLY, "Hi.", '{"city": null, "days": 2}'),
    ],
)
def test_calls_and_content_streamed_and_not(client, fake, chunk_size, model, text, content, arguments):
    request = {"model": model, "messages": MESSAGES, "tools": [WEATHER]}
    fake.script(text, chunk_size=chunk_size)
    reply = client.chat.completions.create(**request).choices[0]
    assert reply.message.content == content and reply.finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in reply.message.tool_calls] == [("get_weather", arguments)]
    fake.script(text, chunk_size=chunk_size)
    _, streamed_content, calls, finish = streamed(client, **request)
    assert (streamed_content, finish) == (content, "tool_calls")
    assert [(name, streamed_arguments) for _, name, streamed_arguments in calls] == [("get_weather", arguments)]
