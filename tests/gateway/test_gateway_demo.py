"""The shipped config.yaml, served for real: the built-in demo backend gives
reasoning and tool calls with no LLM server anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import load_config
from tests.sdk_clients import openai_client

SHIPPED_CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string"}},
            "required": ["city", "days"],
        },
    },
}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def demo(serve) -> tuple[openai.OpenAI, str]:
    """An SDK client on the shipped config, and the demo model's name."""
    config = load_config(SHIPPED_CONFIG)
    url = serve(create_app(config))
    client = openai_client(url)
    return client, config.models[0].name


def test_demo_model_is_listed_as_demo(demo):
    client, model = demo
    listed = {entry.id: entry.owned_by for entry in client.models.list().data}
    assert listed[model] == "parsegate-demo"


def test_demo_reasoning_and_tool_call(demo):
    client, model = demo
    choice = client.chat.completions.create(model=model, messages=QUESTION, tools=[WEATHER_TOOL]).choices[0]
    assert "What is the weather in Paris?" in choice.message.reasoning_content
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": 1}
    assert choice.finish_reason == "tool_calls"


def test_demo_streams_reasoning_and_tool_call(demo):
    client, model = demo
    stream = client.chat.completions.create(
        model=model, messages=QUESTION, tools=[WEATHER_TOOL], stream=True, stream_options={"include_usage": True}
    )
    reasoning, arguments, names, finish, usage = "", "", [], None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            reasoning += choice.delta.to_dict().get("reasoning_content", "")
            for call in choice.delta.tool_calls or ():
                names += [call.function.name] if call.function.name else []
                arguments += call.function.arguments or ""
            finish = choice.finish_reason or finish
    assert "What is the weather in Paris?" in reasoning
    assert names == ["get_weather"] and json.loads(arguments) == {"city": "Paris", "days": 1}
    assert finish == "tool_calls" and usage.completion_tokens > 0


def test_demo_answers_a_tool_result_in_plain_text(demo):
    client, model = demo
    messages = [
        *QUESTION,
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24 C"},
    ]
    choice = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL]).choices[0]
    assert choice.message.content.strip() == "The tool returned: sunny, 24 C"
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
