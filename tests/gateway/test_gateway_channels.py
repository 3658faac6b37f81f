"""Muse Glimmer and Beam through the real gateway with the OpenAI client:
reasoning and calls, streamed at any chunk size as not streamed, with the
backend asked to keep the special tokens the channels are written in."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    },
}
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
}
MESSAGES = [{"role": "user", "content": "Weather in Paris, and search x?"}]
OUTPUTS = {
    "muse": (
        " to=self<|message|>Need weather.<|eom|><|start|>assistant to=functions.get_weather<|message|><atem:function_calls>\n"
        '<atem:invoke name="get_weather">\n<atem:parameter name="city">Paris</atem:parameter>\n'
        '<atem:parameter name="days">2</atem:parameter>\n</atem:invoke>\n'
        '<atem:invoke name="search">\n<atem:parameter name="query">x</atem:parameter>\n</atem:invoke>\n'
        "</atem:function_calls><|eom|>"
    ),
    "beam": (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
        ' to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">\nParis\n</rfl:parameter>'
        '<rfl:parameter name="days">\n2\n</rfl:parameter><|end|><|start|>assistant'
        ' to=search<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="query">\nx\n</rfl:parameter><|call|>'
    ),
}
CALLS = [("get_weather", '{"city": "Paris", "days": 2}'), ("search", '{"query": "x"}')]


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway serving each format as the model of its name."""
    _, backend_url = fake_backend_server
    models = [
        {"name": name, "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": name, "tool_call_parser": name}
        for name in OUTPUTS
    ]
    gateway = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(gateway)


@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
@pytest.mark.parametrize("model", sorted(OUTPUTS))
def test_reasoning_and_two_calls(client, fake, model, chunk_size):
    fake.script(OUTPUTS[model], chunk_size=chunk_size)
    request = {"model": model, "messages": MESSAGES, "tools": [WEATHER, SEARCH]}
    reasoning, content, calls, finish = "", "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                if call.function.name:
                    calls[call.index] = [call.function.name, ""]
                calls[call.index][1] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    assert (reasoning, content, finish) == ("Need weather.", "", "tool_calls")
    assert [tuple(calls[i]) for i in sorted(calls)] == CALLS
    assert fake.last_body["skip_special_tokens"] is False

    reply = client.chat.completions.create(**request)
    message = reply.choices[0].message
    assert (message.reasoning_content, message.content, reply.choices[0].finish_reason) == (
        "Need weather.",
        None,
        "tool_calls",
    )
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == CALLS
