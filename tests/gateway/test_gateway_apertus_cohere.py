"""Apertus 2509 and Cohere Command A Reasoning through the real gateway,
with parsers picked from the backend model name: reasoning, content and
calls come back the same streamed (in any chunk size) as not, the
backend is asked to keep the special tokens these formats are made of,
and a strict tool constrains Apertus calls with SGLang's structural tag."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
]
MESSAGES = [{"role": "user", "content": "Weather in Paris, and search x?"}]
BACKEND_MODELS = {
    "apertus": "swiss-ai/Apertus-70B-Instruct-2509",
    "cohere": "CohereLabs/command-a-reasoning-08-2025",
}
APERTUS = (
    "<|inner_prefix|>Weather first.<|tools_prefix|>"
    '[{"get_weather": {"city": "Paris"}}]<|tools_suffix|> Then search.<|inner_suffix|>'
    'Searching too.<|tools_prefix|>[{"search": {"query": "x"}}]<|tools_suffix|><|assistant_end|>'
)
COHERE = (
    "Two lookups.<|END_THINKING|><|START_ACTION|>[\n"
    '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}},\n'
    '    {"tool_call_id": "1", "tool_name": "search", "parameters": {"query": "x"}}\n'
    "]<|END_ACTION|><|END_OF_TURN_TOKEN|>"
)
CALLS = [("get_weather", '{"city": "Paris"}'), ("search", '{"query": "x"}')]


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, backend_url = fake_backend_server
    models = [
        {"name": name, "backend": {"url": f"{backend_url}/v1", "model": model}}
        for name, model in BACKEND_MODELS.items()
    ]
    models.append(
        {
            "name": "apertus-sglang",
            "backend": {"url": f"{backend_url}/v1", "model": BACKEND_MODELS["apertus"], "server": "sglang"},
        }
    )
    gateway = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(gateway)


def streamed(client, **request) -> tuple[str, str, list[tuple[str, str]], str]:
    reasoning, content, calls, finish = "", "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            delta = choice.delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            content += delta.content or ""
            for call in delta.tool_calls or ():
                calls.setdefault(call.index, [call.function.name, ""])[1] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return reasoning, content, [tuple(calls[i]) for i in sorted(calls)], finish


def whole(client, **request) -> tuple[str, str, list[tuple[str, str]], str]:
    choice = client.chat.completions.create(**request).choices[0]
    message = choice.message
    calls = [(call.function.name, call.function.arguments) for call in message.tool_calls or ()]
    return message.reasoning_content or "", message.content or "", calls, choice.finish_reason


@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
@pytest.mark.parametrize(
    ("model", "output", "reasoning", "content"),
    [
        ("apertus", APERTUS, "Weather first. Then search.", "Searching too."),
        ("cohere", COHERE, "Two lookups.", ""),
    ],
)
def test_reasoning_and_two_calls(client, fake, model, output, reasoning, content, chunk_size):
    fake.script(output, chunk_size=chunk_size)
    request = {"model": model, "messages": MESSAGES, "tools": TOOLS}
    expected = (reasoning, content, CALLS, "tool_calls")
    assert streamed(client, **request) == expected
    assert fake.last_body["skip_special_tokens"] is False
    assert whole(client, **request) == expected


@pytest.mark.parametrize("chunk_size", [1, 1000])
def test_cohere_answer_is_unwrapped(client, fake, chunk_size):
    fake.script(
        "Easy.<|END_THINKING|><|START_TEXT|>It is sunny.<|END_TEXT|><|END_OF_TURN_TOKEN|>", chunk_size=chunk_size
    )
    request = {"model": "cohere", "messages": MESSAGES}
    assert streamed(client, **request) == ("Easy.", "It is sunny.", [], "stop")
    assert whole(client, **request) == ("Easy.", "It is sunny.", [], "stop")


def test_a_strict_tool_sends_the_apertus_structural_tag(client, fake):
    weather = {"type": "function", "function": {**TOOLS[0]["function"], "strict": True}}
    begin, end = '<|tools_prefix|>[{"get_weather": ', "}]<|tools_suffix|>"
    fake.script(begin + '{"city": "Paris"}' + end, chunk_size=3)
    request = {"model": "apertus-sglang", "messages": MESSAGES, "tools": [weather, TOOLS[1]]}
    assert whole(client, **request) == ("", "", CALLS[:1], "tool_calls")
    assert fake.last_body["response_format"] == {
        "type": "structural_tag",
        "structures": [
            {"begin": begin, "schema": TOOLS[0]["function"]["parameters"], "end": end},
            {"begin": '<|tools_prefix|>[{"search": ', "schema": {}, "end": end},
        ],
        "triggers": ["<|tools_prefix|>"],
    }
