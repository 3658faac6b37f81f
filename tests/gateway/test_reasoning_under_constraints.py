"""Reasoning under a constraint (issue 43): a thinking model whose reply is
constrained (`tool_choice` required or named, Anthropic's `any` / `tool`, a
JSON `response_format`) keeps its reasoning. The constraint each backend
dialect is sent lets the reasoning block come first, and the reply is read
from its reasoning into the forced call or JSON, streamed and whole, on
every surface, with the official clients."""

from __future__ import annotations

import json

import anthropic
import openai
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.plan.gbnf import schema_grammar
from tests.conftest import REPO
from tests.gateway.test_gateway_e2e import MESSAGES, TOOLS, both_ways
from tests.gateway.test_tool_choice import NAMED, REQUIRED_SCHEMA, WEATHER_CALL
from tests.sdk_clients import anthropic_client, openai_client

THOUGHT = "I need the weather tool, not the clock."
ARRAY = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
THOUGHT_THEN_ARRAY = f"<think>\n{THOUGHT}\n</think>\n\n{ARRAY}"
GAP = {"type": "regex", "pattern": "[ \\t\\r\\n]{0,4}"}
THINK_BLOCK = {"type": "tag", "begin": "", "content": {"type": "any_text"}, "end": "</think>"}
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
THINK_RULES = (
    "root ::= reasoning gap answer\n"
    'reasoning ::= "<" reasoning-1 | [^<] reasoning\n'
    'reasoning-1 ::= "<" reasoning-1 | "/" reasoning-2 | [^</] reasoning\n'
    'reasoning-2 ::= "<" reasoning-1 | "t" reasoning-3 | [^<t] reasoning\n'
    'reasoning-3 ::= "<" reasoning-1 | "h" reasoning-4 | [^<h] reasoning\n'
    'reasoning-4 ::= "<" reasoning-1 | "i" reasoning-5 | [^<i] reasoning\n'
    'reasoning-5 ::= "<" reasoning-1 | "n" reasoning-6 | [^<n] reasoning\n'
    'reasoning-6 ::= "<" reasoning-1 | "k" reasoning-7 | [^<k] reasoning\n'
    'reasoning-7 ::= "<" reasoning-1 | ">" | [^<>] reasoning\n'
    "gap ::= [ \\t\\r\\n]{0,4}\n"
)


def after_thinking(schema: dict) -> dict:
    """The structural tag for `schema` behind Qwen3's reasoning block."""
    return {
        "type": "structural_tag",
        "format": {"type": "sequence", "elements": [THINK_BLOCK, GAP, json_schema(schema)]},
    }


def json_schema(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": schema}


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    """Qwen3 (thinking on unless a request turns it off) once per dialect
    and in template mode on vLLM, Kimi 1.5 (reasoning only after its start
    marker) on SGLang, and gpt-oss (Harmony channels, no text block to wait
    for) on vLLM."""
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1"}
    models = [
        {
            "name": f"qwen3-{dialect}",
            "backend": backend,
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen25",
            "guided_decoding": dialect,
        }
        for dialect in ("vllm", "sglang", "llamacpp", "none")
    ]
    models.append({"name": "kimi-sglang", "backend": backend, "reasoning_parser": "kimi", "guided_decoding": "sglang"})
    models.append(
        {
            "name": "gpt-oss-vllm",
            "backend": backend,
            "reasoning_parser": "gpt-oss",
            "tool_call_parser": "gpt-oss",
            "guided_decoding": "vllm",
        }
    )
    models.append(
        {
            "name": "qwen3-template",
            "backend": {**backend, "server": "vllm"},
            "chat_template": str(REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"),
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen25",
        }
    )
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(scope="module")
def client(gateway) -> openai.OpenAI:
    return openai_client(gateway)


@pytest.fixture(scope="module")
def claude(gateway) -> anthropic.Anthropic:
    return anthropic_client(gateway)


def test_required_on_vllm_sends_a_structural_tag_with_the_reasoning_first(client, fake):
    both_ways(client, fake, THOUGHT_THEN_ARRAY, model="qwen3-vllm", tools=TOOLS, tool_choice="required")
    body = fake.last_body
    assert set(body["structured_outputs"]) == {"structural_tag"}
    assert json.loads(body["structured_outputs"]["structural_tag"]) == after_thinking(REQUIRED_SCHEMA)
    assert body["tool_choice"] == "none" and "response_format" not in body


def test_named_choice_on_sglang_sends_the_tag_as_response_format(client, fake):
    both_ways(client, fake, THOUGHT_THEN_ARRAY, model="qwen3-sglang", tools=TOOLS, tool_choice=NAMED)
    schema = {"type": "array", "minItems": 1, "items": WEATHER_CALL}
    assert fake.last_body["response_format"] == after_thinking(schema)
    assert fake.last_body["tool_choice"] == "auto"


def test_required_on_llamacpp_sends_a_grammar_with_the_reasoning_first(client, fake):
    both_ways(client, fake, THOUGHT_THEN_ARRAY, model="qwen3-llamacpp", tools=TOOLS, tool_choice="required")
    assert fake.last_body["grammar"] == THINK_RULES + schema_grammar(REQUIRED_SCHEMA, start="answer")
    assert fake.last_body["tool_choice"] == "none"


REASONING_FIRST = {
    "qwen3-vllm": lambda body: "structural_tag" in body["structured_outputs"],
    "qwen3-sglang": lambda body: body["response_format"]["type"] == "structural_tag",
    "qwen3-llamacpp": lambda body: body["grammar"].startswith(THINK_RULES),
}


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 1000])
@pytest.mark.parametrize("model", sorted(REASONING_FIRST))
def test_a_streamed_reply_goes_through_its_reasoning_into_the_forced_call(client, fake, model, chunk_size):
    result = both_ways(client, fake, THOUGHT_THEN_ARRAY, chunk_size, model=model, tools=TOOLS, tool_choice="required")
    assert result["reasoning_content"].strip() == THOUGHT
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["content"] is None and result["finish_reason"] == "tool_calls"
    assert REASONING_FIRST[model](fake.last_body)


def test_without_guided_decoding_nothing_is_constrained_and_the_parser_reads_the_reasoning(client, fake):
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    reply = f"<think>\n{THOUGHT}\n</think>\n\n{call}"
    for model in ("qwen3-none", "qwen3-vllm"):
        result = both_ways(client, fake, reply, model=model, tools=TOOLS, tool_choice="required")
        constrained = {"structured_outputs", "response_format", "grammar"} & set(fake.last_body)
        if model == "qwen3-none":
            assert result["reasoning_content"].strip() == THOUGHT
            assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
            assert not constrained
        else:  # the backend is held to a call array behind the reasoning
            assert result["reasoning_content"].strip() == THOUGHT and constrained == {"structured_outputs"}
            assert set(fake.last_body["structured_outputs"]) == {"structural_tag"}


def test_template_mode_sends_the_tag_to_completions_and_reads_the_reasoning(client, fake):
    result = both_ways(client, fake, THOUGHT_THEN_ARRAY, 3, model="qwen3-template", tools=TOOLS, tool_choice="required")
    assert result["reasoning_content"].strip() == THOUGHT
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    body = fake.last_body
    assert body["prompt"].endswith("<|im_start|>assistant\n") and "tool_choice" not in body
    assert json.loads(body["structured_outputs"]["structural_tag"]) == after_thinking(REQUIRED_SCHEMA)


def test_a_tool_call_marker_inside_the_reasoning_stays_reasoning(client, fake):
    """Qwen3's reasoning stage ends at `<tool_call>` (SGLang's detector);
    the constraint ends it at `</think>` alone, and so does the reader."""
    thought = "I could write <tool_call> myself, but the array is asked for."
    reply = f"<think>\n{thought}\n</think>\n\n{ARRAY}"
    result = both_ways(client, fake, reply, 2, model="qwen3-sglang", tools=TOOLS, tool_choice="required")
    assert result["reasoning_content"].strip() == thought
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})] and result["content"] is None


def test_a_reply_that_starts_inside_reasoning_is_read_from_it(client, fake):
    """The template opened the block (Qwen3 Thinking-2507, DeepSeek R1): the model writes only its end."""
    result = both_ways(client, fake, f"{THOUGHT}</think>{ARRAY}", 1, model="qwen3-vllm", tools=TOOLS, tool_choice=NAMED)
    assert result["reasoning_content"].strip() == THOUGHT
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]


def test_thinking_turned_off_keeps_the_plain_schema_and_reads_from_outside_reasoning(client, fake):
    request = {"model": "qwen3-vllm", "tools": TOOLS, "tool_choice": "required"}
    result = both_ways(client, fake, ARRAY, **request, reasoning_effort="none")
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})] and result["reasoning_content"] is None
    assert fake.last_body["structured_outputs"] == {"json": REQUIRED_SCHEMA}
    both_ways(client, fake, THOUGHT_THEN_ARRAY, **request, reasoning_effort="high")
    assert json.loads(fake.last_body["structured_outputs"]["structural_tag"]) == after_thinking(REQUIRED_SCHEMA)


def test_a_format_whose_reasoning_needs_its_start_marker_gets_an_optional_block(client, fake):
    thought_then_json = '◁think▷Short.◁/think▷\n{"answer": "yes"}'
    result = both_ways(
        client,
        fake,
        thought_then_json,
        1,
        model="kimi-sglang",
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}},
    )
    assert (result["reasoning_content"], result["content"]) == ("Short.", '\n{"answer": "yes"}')
    block = {"type": "tag", "begin": "◁think▷", "content": {"type": "any_text"}, "end": "◁/think▷"}
    then = {"type": "sequence", "elements": [block, GAP, json_schema(ANSWER_SCHEMA)]}
    either = {"type": "or", "elements": [then, json_schema(ANSWER_SCHEMA)]}
    assert fake.last_body["response_format"] == {"type": "structural_tag", "format": either}


def test_harmony_channels_keep_the_plain_schema(client, fake):
    """gpt-oss reasons in a channel, not a block of text a tag can hold."""
    for model in ("gpt-oss-vllm", "qwen3-vllm"):
        client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, tool_choice="required")
        plain = fake.last_body["structured_outputs"] == {"json": REQUIRED_SCHEMA}
        assert plain == (model == "gpt-oss-vllm")


@pytest.mark.parametrize("model", ["qwen3-vllm", "qwen3-sglang"])
def test_a_json_response_format_lets_the_reasoning_come_first(client, fake, model):
    response_format = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}}
    reply = f'<think>\n{THOUGHT}\n</think>\n\n{{"answer": "Paris"}}'
    result = both_ways(client, fake, reply, 2, model=model, response_format=response_format)
    assert result["reasoning_content"].strip() == THOUGHT
    assert json.loads(result["content"]) == {"answer": "Paris"}
    body = fake.last_body
    if model == "qwen3-vllm":
        assert "response_format" not in body
        assert json.loads(body["structured_outputs"]["structural_tag"]) == after_thinking(ANSWER_SCHEMA)
    else:
        assert body["response_format"] == after_thinking(ANSWER_SCHEMA)


def test_json_object_is_any_object_after_the_reasoning(client, fake):
    both_ways(client, fake, '<think>ok</think>{"a": 1}', model="qwen3-sglang", response_format={"type": "json_object"})
    assert fake.last_body["response_format"] == after_thinking({"type": "object"})


def test_a_response_format_is_forwarded_as_sent_where_the_dialect_does_not_rewrite_it(client, fake):
    response_format = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}}
    for model in ("qwen3-llamacpp", "qwen3-none", "qwen3-sglang"):
        result = both_ways(
            client, fake, '<think>ok</think>{"answer": "x"}', model=model, response_format=response_format
        )
        assert (result["reasoning_content"], result["content"]) == ("ok", '{"answer": "x"}')
        forwarded = fake.last_body["response_format"] == response_format
        assert forwarded == (model != "qwen3-sglang") and "grammar" not in fake.last_body


def test_a_client_constraint_beside_response_format_is_left_alone(client, fake):
    response_format = {"type": "json_object"}
    for extra in ({"regex": "yes|no"}, {}):
        client.chat.completions.create(
            model="qwen3-sglang", messages=MESSAGES, response_format=response_format, extra_body=extra
        )
        assert (fake.last_body["response_format"] == response_format) == bool(extra)


def test_responses_streams_the_reasoning_item_then_the_forced_call(client, fake):
    fake.script(THOUGHT_THEN_ARRAY, chunk_size=2)
    tools = [{"type": "function", **tool["function"]} for tool in TOOLS]
    request = {"model": "qwen3-vllm", "input": "Weather in Paris?", "tools": tools, "tool_choice": "required"}
    events = list(client.responses.create(stream=True, **request))
    final = events[-1].response.to_dict()
    reasoning, call = final["output"]
    assert reasoning["type"] == "reasoning" and reasoning["summary"][0]["text"].strip() == THOUGHT
    assert (call["type"], call["name"], json.loads(call["arguments"])) == (
        "function_call",
        "get_weather",
        {"city": "Paris"},
    )
    assert "structural_tag" in fake.last_body["structured_outputs"]
    deltas = "".join(event.delta for event in events if event.type == "response.function_call_arguments.delta")
    assert json.loads(deltas) == {"city": "Paris"}


def test_responses_text_format_lets_the_reasoning_come_first(client, fake):
    fake.script('<think>\nThink.\n</think>\n\n{"answer": "Paris"}', chunk_size=3)
    text = {"format": {"type": "json_schema", "name": "answer", "schema": ANSWER_SCHEMA}}
    response = client.responses.create(model="qwen3-sglang", input="Capital of France?", text=text)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert json.loads(response.output_text) == {"answer": "Paris"}
    assert fake.last_body["response_format"] == after_thinking(ANSWER_SCHEMA)


@pytest.mark.parametrize(
    ("tool_choice", "schema"),
    [
        ({"type": "any"}, REQUIRED_SCHEMA),
        ({"type": "tool", "name": "get_weather"}, {"type": "array", "minItems": 1, "items": WEATHER_CALL}),
    ],
)
def test_messages_stream_a_thinking_block_then_the_forced_tool_use(claude, fake, tool_choice, schema):
    fake.script(THOUGHT_THEN_ARRAY, chunk_size=1)
    tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
    request = {"model": "qwen3-sglang", "max_tokens": 1024, "messages": MESSAGES, "tools": tools}
    blocks, fragments = [], []
    for event in claude.messages.create(stream=True, tool_choice=tool_choice, **request):
        if event.type == "content_block_start":
            blocks.append(event.content_block.type)
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            fragments.append(event.delta.partial_json)
    assert blocks == ["thinking", "tool_use"]
    assert orjson.loads("".join(fragments)) == {"city": "Paris"}
    assert fake.last_body["response_format"] == after_thinking(schema)
    fake.script(THOUGHT_THEN_ARRAY)
    message = claude.messages.create(tool_choice=tool_choice, **request)
    thinking, call = message.content
    assert thinking.type == "thinking" and thinking.thinking.strip() == THOUGHT
    assert (call.type, call.name, call.input) == ("tool_use", "get_weather", {"city": "Paris"})
    assert message.stop_reason == "tool_use"
