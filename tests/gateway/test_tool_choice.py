"""tool_choice and parallel_tool_calls through the real gateway, with the
official `openai` client: the constraint each backend dialect is sent, and
the calls, finish reasons and warnings the client gets back."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.plan.gbnf import schema_grammar
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TIME_TOOL, TOOLS, TWO_CALLS, WEATHER_TOOL, both_ways
from tests.sdk_clients import openai_client

WEATHER_SCHEMA = WEATHER_TOOL["function"]["parameters"]
ARRAY_OF_TWO = (
    '[{"name": "get_weather", "parameters": {"city": "Paris"}}, '
    '{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}]'
)
WEATHER_CALL = {
    "properties": {"name": {"type": "string", "enum": ["get_weather"]}, "parameters": WEATHER_SCHEMA},
    "required": ["name", "parameters"],
}
TIME_CALL = {
    "properties": {"name": {"type": "string", "enum": ["get_time"]}, "parameters": {"type": "object"}},
    "required": ["name", "parameters"],
}
REQUIRED_SCHEMA = {"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": [WEATHER_CALL, TIME_CALL]}}
NAMED = {"type": "function", "function": {"name": "get_weather"}}
STRICT_WEATHER = {"type": "function", "function": {**WEATHER_TOOL["function"], "strict": True}}


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway with the qwen3 model once per guided-decoding dialect,
    thinking off, so that a constraint holds from the reply's first token
    (with thinking on: test_reasoning_under_constraints.py)."""
    _, fake_url = fake_backend_server
    models = [
        {
            "name": f"qwen3-{dialect}",
            "backend": {"url": f"{fake_url}/v1"},
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen25",
            "guided_decoding": dialect,
            "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
        }
        for dialect in ("vllm", "sglang", "llamacpp", "none")
    ]
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(url)


def call_array_calls_counted(client) -> float:
    metrics = httpx.get(str(client.base_url).removesuffix("/v1/") + "/metrics").text
    sample = 'parsegate_tool_calls_total{model="qwen3-vllm",parser="call_array"} '
    lines = [line for line in metrics.splitlines() if line.startswith(sample)]
    return float(lines[0].removeprefix(sample)) if lines else 0.0


def test_calls_read_from_a_constrained_array_are_counted_under_call_array(client, fake):
    before = call_array_calls_counted(client)
    both_ways(client, fake, ARRAY_OF_TWO, model="qwen3-vllm", tools=TOOLS, tool_choice="required")
    assert call_array_calls_counted(client) - before == 4  # two calls, streamed and not


def choice_extras(client, **request) -> tuple[dict, dict]:
    """The first choice's fields, non-streamed, and its finish chunk's, streamed."""
    whole = client.chat.completions.create(**request).choices[0].to_dict()
    finish = [
        choice.to_dict()
        for chunk in client.chat.completions.create(stream=True, **request)
        for choice in chunk.choices
        if choice.finish_reason
    ]
    assert len(finish) == 1
    return whole, finish[0]


def test_required_on_vllm_sends_the_call_array_schema_and_reads_the_array(client, fake):
    result = both_ways(client, fake, ARRAY_OF_TWO, model="qwen3-vllm", tools=TOOLS, tool_choice="required")
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "Europe/Paris"})]
    assert result["finish_reason"] == "tool_calls" and result["content"] is None
    assert result["reasoning_content"] is None  # with thinking off, a constrained reply starts outside reasoning
    body = fake.last_body
    assert body["structured_outputs"] == {"json": REQUIRED_SCHEMA}
    assert body["tool_choice"] == "none" and body["tools"] == TOOLS


def test_named_choice_on_sglang_constrains_to_that_function(client, fake):
    reply = '[{"name": "get_weather", "parameters": {"city": "Oslo"}}]'
    result = both_ways(client, fake, reply, chunk_size=1, model="qwen3-sglang", tools=TOOLS, tool_choice=NAMED)
    assert result["tool_calls"] == [("get_weather", {"city": "Oslo"})]
    schema = {"type": "array", "minItems": 1, "items": WEATHER_CALL}
    assert fake.last_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "tool_calls", "schema": schema},
    }
    assert fake.last_body["tool_choice"] == "auto"


def test_required_without_parallel_calls_on_llamacpp_allows_one_item(client, fake):
    request = {"model": "qwen3-llamacpp", "tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    result = both_ways(client, fake, ARRAY_OF_TWO, **request)
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert fake.last_body["grammar"] == schema_grammar({**REQUIRED_SCHEMA, "maxItems": 1})
    assert fake.last_body["parallel_tool_calls"] is False


def test_a_single_call_object_is_read_as_a_one_call_array(client, fake):
    reply = '{"name": "get_time", "arguments": {}}'
    result = both_ways(client, fake, reply, model="qwen3-vllm", tools=TOOLS, tool_choice="required")
    assert result["tool_calls"] == [("get_time", {})] and result["finish_reason"] == "tool_calls"


def test_without_guided_decoding_required_uses_the_models_own_parser(client, fake):
    result = both_ways(client, fake, ONE_CALL, model="qwen3-none", tools=TOOLS, tool_choice="required")
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["reasoning_content"].strip() == "I need the weather tool."
    body = fake.last_body
    assert body["tool_choice"] == "required"
    assert not {"structured_outputs", "response_format", "json_schema"} & set(body)


@pytest.mark.parametrize("model", ["qwen3-vllm", "qwen3-none"])
def test_required_but_no_call_is_flagged(client, fake, model):
    fake.script("<think>No tool fits.</think>I cannot call a tool for that.")
    whole, finish = choice_extras(client, model=model, messages=MESSAGES, tools=TOOLS, tool_choice="required")
    assert whole["message"]["content"] == "I cannot call a tool for that."
    assert whole["message"]["reasoning_content"] == "No tool fits."
    assert whole["finish_reason"] == finish["finish_reason"] == "stop"
    assert whole["parsegate_warning"]["code"] == finish["parsegate_warning"]["code"] == "no_tool_call"


def test_a_made_call_carries_no_warning(client, fake):
    fake.script(ONE_CALL)
    whole, finish = choice_extras(client, model="qwen3-none", messages=MESSAGES, tools=TOOLS, tool_choice="required")
    assert "parsegate_warning" not in whole and "parsegate_warning" not in finish
    fake.script("<think>Easy.</think>Just text.")
    whole, finish = choice_extras(client, model="qwen3-none", messages=MESSAGES, tools=TOOLS, tool_choice="auto")
    assert "parsegate_warning" not in whole and "parsegate_warning" not in finish


def test_named_choice_drops_calls_to_other_functions(client, fake):
    calls_time_then_weather = (
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    )
    request = {"model": "qwen3-none", "tools": TOOLS, "tool_choice": NAMED}
    result = both_ways(client, fake, calls_time_then_weather, chunk_size=2, **request)
    assert result["tool_calls"] == [("get_weather", {"city": "Rome"})]  # streamed at index 0
    assert result["finish_reason"] == "tool_calls"
    only_other = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    fake.script(only_other)
    whole, finish = choice_extras(client, messages=MESSAGES, **request)
    assert whole["parsegate_warning"]["code"] == finish["parsegate_warning"]["code"] == "no_tool_call"
    assert whole["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("parameters", "why"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            "does not name a $defs entry",
        ),
        ({"type": "object", "properties": {"a": {"enum": []}}}, "is empty"),
        ({"type": "object", "properties": {"a": False}, "required": ["a"]}, "allows no value"),
        ({"type": "array", "maxItems": -1}, "maxItems must be a non-negative integer"),
    ],
)
def test_required_on_llamacpp_refuses_a_schema_it_cannot_turn_into_a_grammar(client, fake, parameters, why):
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    with pytest.raises(openai.BadRequestError, match="cannot be constrained") as caught:
        client.chat.completions.create(model="qwen3-llamacpp", messages=MESSAGES, tools=tools, tool_choice="required")
    assert why in caught.value.body["message"] and caught.value.body["param"] == "tools"
    assert fake.requests == []


def test_required_with_a_client_constraint_is_refused(client, fake):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="qwen3-sglang",
            messages=MESSAGES,
            tools=TOOLS,
            tool_choice="required",
            response_format={"type": "json_object"},
        )
    assert caught.value.body["param"] == "response_format"
    assert fake.requests == []


def test_strict_tool_on_auto_sends_the_structural_tag(client, fake):
    tools = [STRICT_WEATHER, TIME_TOOL]
    tag = {
        "type": "structural_tag",
        "structures": [
            {
                "begin": '<tool_call>\n{"name":"get_weather", "arguments":',
                "schema": WEATHER_SCHEMA,
                "end": "}\n</tool_call>",
            },
            {"begin": '<tool_call>\n{"name":"get_time", "arguments":', "schema": {}, "end": "}\n</tool_call>"},
        ],
        "triggers": ["<tool_call>"],
    }
    result = both_ways(client, fake, ONE_CALL, model="qwen3-sglang", tools=tools)
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert fake.last_body["response_format"] == tag and fake.last_body["tool_choice"] == "auto"
    both_ways(client, fake, ONE_CALL, model="qwen3-vllm", tools=tools, tool_choice="auto")
    assert json.loads(fake.last_body["structured_outputs"]["structural_tag"]) == tag
    assert fake.last_body["tool_choice"] == "none"
    both_ways(client, fake, ONE_CALL, model="qwen3-llamacpp", tools=tools)
    assert not {"response_format", "json_schema", "grammar"} & set(fake.last_body)
    assert "tool_choice" not in fake.last_body


def test_auto_without_strict_tools_is_not_constrained(client, fake):
    both_ways(client, fake, ONE_CALL, model="qwen3-sglang", tools=TOOLS)
    assert "response_format" not in fake.last_body


def test_parallel_tool_calls_false_returns_the_first_call_only(client, fake):
    request = {"model": "qwen3-none", "tools": TOOLS, "parallel_tool_calls": False}
    result = both_ways(client, fake, TWO_CALLS, **request)
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["finish_reason"] == "tool_calls"
    assert fake.last_body["parallel_tool_calls"] is False
    fake.script(TWO_CALLS, chunk_size=2)
    stream = client.chat.completions.create(messages=MESSAGES, stream=True, **request)
    indexes = {call.index for chunk in stream for choice in chunk.choices for call in choice.delta.tool_calls or ()}
    assert indexes == {0}


def test_every_choice_reads_its_own_call_array_and_is_flagged_on_its_own(client, fake):
    fake.script('[{"name": "get_time", "parameters": {}}]', "No call here.", chunk_size=3)
    request = {"model": "qwen3-vllm", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "required", "n": 2}
    whole = [choice.to_dict() for choice in client.chat.completions.create(**request).choices]
    finish = {
        choice.index: choice.to_dict()
        for chunk in client.chat.completions.create(stream=True, **request)
        for choice in chunk.choices
        if choice.finish_reason
    }
    assert whole[0]["message"]["tool_calls"][0]["function"]["name"] == "get_time"
    assert [choice["finish_reason"] for choice in whole] == [finish[0]["finish_reason"], finish[1]["finish_reason"]]
    assert [choice["finish_reason"] for choice in whole] == ["tool_calls", "stop"]
    assert "parsegate_warning" not in whole[0] and "parsegate_warning" not in finish[0]
    assert whole[1]["parsegate_warning"]["code"] == finish[1]["parsegate_warning"]["code"] == "no_tool_call"
    assert whole[1]["message"]["content"] == "No call here."


def test_tools_with_conflicting_defs_cannot_be_constrained(client, fake):
    def tool(name: str, point: dict) -> dict:
        parameters = {"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}}, "$defs": {"Point": point}}
        return {"type": "function", "function": {"name": name, "parameters": parameters}}

    tools = [tool("a", {"type": "object"}), tool("b", {"type": "array"})]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="qwen3-vllm", messages=MESSAGES, tools=tools, tool_choice="required")
    assert caught.value.body["param"] == "tools" and "Point" in caught.value.body["message"]
    same = [tool("a", {"type": "object"}), tool("b", {"type": "object"})]
    fake.script('[{"name": "b", "parameters": {"p": {}}}]')
    client.chat.completions.create(model="qwen3-vllm", messages=MESSAGES, tools=same, tool_choice="required")
    assert fake.last_body["structured_outputs"]["json"]["$defs"] == {"Point": {"type": "object"}}
