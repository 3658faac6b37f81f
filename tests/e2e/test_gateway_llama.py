"""parsegate in front of a real llama-server, with the openai SDK as the
client, in both modes: chat mode (the server's /v1/chat/completions returns
raw text) and template mode (parsegate renders the prompt with the
template the server reports at GET /props and calls /v1/completions).
A one-literal grammar, forwarded with each request, forces the random model
to write each case's text through real sampling and detokenisation; the
client must get what parsegate's parsers make of that text."""

from __future__ import annotations

import json
import logging

import jsonschema_rs
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import parse_text, tool_format
from tests.e2e.llama import literal_grammar
from tests.e2e.tiny_gguf import byte_token_id
from tests.sdk_clients import openai_client

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
MESSAGES = [{"role": "user", "content": "Weather in Zürich and 東京?"}]


def _calls(parser: str) -> str:
    fmt = tool_format(parser)
    return "".join(
        fmt.render_call("get_weather", json.dumps({"city": city}, ensure_ascii=False)) for city in ("Zürich", "東京")
    )


CASES = {
    "qwen3": ("qwen3", "qwen25", "<think>Two cities: look both up.</think>\n\n" + _calls("qwen25")),
    "deepseek": (None, "deepseekv3", _calls("deepseekv3")),
    "gpt-oss": (
        "gpt-oss",
        "gpt-oss",
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.get_weather <|constrain|>json<|message|>{"city": "Zürich"}<|call|>',
    ),
    "pythonic": (None, "pythonic", '[get_weather(city="Zürich"), get_weather(city="東京")]'),
    "content": ("qwen3", "qwen25", "<think>Easy.</think>Grüße aus Zürich — 晴れ."),
}


@pytest.fixture(scope="module")
def client(serve, llama_server) -> openai.OpenAI:
    models = []
    for name, (reasoning, tools, _) in {**CASES, "choice": (None, "qwen25", "")}.items():
        for mode in ("chat", "template"):
            entry = {
                "name": f"{name}-{mode}",
                "backend": {"url": f"{llama_server.url}/v1", "server": "llamacpp", "timeout": 60},
                "reasoning_parser": reasoning or "none",
                "tool_call_parser": tools,
            }
            if mode == "template":
                entry["chat_template"] = "backend"
            models.append(entry)
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(url, timeout=60)


def _streamed(stream) -> tuple[str, str, list[tuple[str, dict]], str | None]:
    reasoning, content, calls, finish = "", "", {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        reasoning += getattr(choice.delta, "reasoning_content", None) or ""
        content += choice.delta.content or ""
        for call in choice.delta.tool_calls or []:
            calls.setdefault(call.index, ["", ""])
            calls[call.index][0] += call.function.name or ""
            calls[call.index][1] += call.function.arguments or ""
        finish = choice.finish_reason or finish
    return reasoning, content, [(name, json.loads(arguments)) for name, arguments in calls.values()], finish


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("mode", ["chat", "template"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_client_gets_what_the_parsers_make_of_the_model_s_text(client, case, mode, stream):
    reasoning_parser, tool_parser, text = CASES[case]
    expected = parse_text(text, reasoning_parser, tool_parser, tools=TOOLS)
    assert expected.tool_calls or case == "content"
    request = {
        "model": f"{case}-{mode}",
        "messages": MESSAGES,
        "tools": TOOLS,
        "extra_body": {"grammar": literal_grammar(text)},
    }
    if stream:
        reasoning, content, calls, finish = _streamed(client.chat.completions.create(**request, stream=True))
    else:
        choice = client.chat.completions.create(**request).choices[0]
        message, finish = choice.message, choice.finish_reason
        reasoning = getattr(message, "reasoning_content", None) or ""
        content = message.content or ""
        calls = [(call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls or []]
    assert calls == [(name, json.loads(arguments)) for name, arguments in expected.tool_calls]
    assert reasoning == (expected.reasoning_content or "")
    assert content == (expected.content or "")
    assert finish == ("tool_calls" if expected.tool_calls else "stop")


def test_a_server_left_unset_is_found_to_be_llama_cpp_and_served_as_such(serve, llama_server, caplog):
    """llama-server refuses a grammar beside tools unless tool_choice is
    "none", which parsegate sends only to a server it knows is llama.cpp."""
    caplog.set_level(logging.INFO, logger="parsegate.backend")
    entry = {"name": "found", "backend": {"url": f"{llama_server.url}/v1", "timeout": 60}}
    entry |= {"reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}
    url = serve(create_app(Config.model_validate({"models": [entry]})))
    found = openai_client(url, timeout=60)
    grammar = {"grammar": literal_grammar(CASES["qwen3"][2])}
    choice = found.chat.completions.create(model="found", messages=MESSAGES, tools=TOOLS, extra_body=grammar).choices[0]
    assert [json.loads(call.function.arguments)["city"] for call in choice.message.tool_calls] == ["Zürich", "東京"]
    assert any("is a 'llamacpp' server" in record.getMessage() for record in caplog.records)


def test_a_client_grammar_with_required_tool_choice_is_a_clear_400(client):
    with pytest.raises(openai.BadRequestError, match="cannot be combined with grammar"):
        client.chat.completions.create(
            model="qwen3-chat",
            messages=MESSAGES,
            tools=TOOLS,
            tool_choice="required",
            extra_body={"grammar": literal_grammar("x")},
        )


@pytest.mark.parametrize("mode", ["chat", "template"])
def test_a_stream_cut_by_max_tokens_ends_with_length(client, mode):
    text = "<think>Long thought " + "and more " * 40 + "</think>Answer."
    _, _, calls, finish = _streamed(
        client.chat.completions.create(
            model=f"qwen3-{mode}",
            messages=MESSAGES,
            max_tokens=8,
            stream=True,
            extra_body={"grammar": literal_grammar(text)},
        )
    )
    assert finish == "length" and calls == []


# Tools for tool_choice "required" and named: the model writes whatever the
# gateway's grammar lets it, so strings are kept short and ASCII (see
# test_schema_grammar.py for why ASCII).
CHOICE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 16}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"enum": ["UTC", "CET", "JST"]}},
                "required": ["zone"],
                "additionalProperties": False,
            },
        },
    },
]
ASCII_ONLY = {str(byte_token_id(byte)): -100 for byte in range(0x80, 0x100)}
CHOICES = {
    "required": ("required", True, {"get_weather", "get_time"}),
    "required, one call": ("required", False, {"get_weather", "get_time"}),
    "named": ({"type": "function", "function": {"name": "get_time"}}, True, {"get_time"}),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("mode", ["chat", "template"])
@pytest.mark.parametrize("choice", sorted(CHOICES))
def test_tool_choice_required_or_named_makes_the_model_call(client, choice, mode, stream):
    """The model samples freely under the constraint the gateway sends
    (a grammar made from the calls' JSON schema): whatever it writes is a
    call the client can run, with arguments its schema accepts."""
    tool_choice, parallel, allowed = CHOICES[choice]
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in CHOICE_TOOLS}
    for seed in range(3):
        request = {
            "model": f"choice-{mode}",
            "messages": MESSAGES,
            "tools": CHOICE_TOOLS,
            "tool_choice": tool_choice,
            "parallel_tool_calls": parallel,
            "seed": seed,
            "max_tokens": 1500,
            "logit_bias": ASCII_ONLY,
        }
        if stream:
            reasoning, content, calls, finish = _streamed(client.chat.completions.create(**request, stream=True))
        else:
            choice_ = client.chat.completions.create(**request).choices[0]
            finish, content = choice_.finish_reason, choice_.message.content or ""
            reasoning = getattr(choice_.message, "reasoning_content", None) or ""
            calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice_.message.tool_calls or []]
        assert finish == "tool_calls" and (reasoning, content) == ("", "")
        assert calls and (parallel or len(calls) == 1)
        for name, arguments in calls:
            assert name in allowed
            assert jsonschema_rs.validator_for(schemas[name]).is_valid(arguments), (name, arguments)
