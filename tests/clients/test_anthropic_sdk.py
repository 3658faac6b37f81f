"""The official `anthropic` Python SDK against the real gateway on loopback,
in front of the scripted raw-text backend: `messages.create` streamed and
not, and `messages.stream`, with thinking and tool use, across format
families and chunk splits. Streams are checked on their own (event order,
`event:` lines), so that a broken stream cannot hide behind a client's
non-streamed retry."""

from __future__ import annotations

import math

import anthropic
import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.conftest import REPO
from tests.sdk_clients import anthropic_client

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
ASK = [{"role": "user", "content": "Run `echo hello`."}]
THOUGHT = "Let me run it."
CALL_INPUT = {"command": "echo hello"}
FAMILIES = {
    "qwen3": (
        f"<think>\n{THOUGHT}\n</think>\n\n"
        '<tool_call>\n{"name": "Bash", "arguments": {"command": "echo hello"}}\n</tool_call>'
    ),
    "deepseek": (
        f"<think>{THOUGHT}</think>"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>Bash\n"
        '```json\n{"command": "echo hello"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    ),
    "gpt-oss": (
        f"<|channel|>analysis<|message|>{THOUGHT}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>"
        '{"command": "echo hello"}<|call|>'
    ),
    "pythonic": '[Bash(command="echo hello")]',
}
THINKS = {"qwen3": True, "deepseek": True, "gpt-oss": True, "pythonic": False}


@pytest.fixture(scope="module")
def messages_gateway(serve, fake_backend_server) -> str:
    """A gateway with one model per format family (and one on a vLLM-kind
    server, for its tokenizer, one on an `other` server, without one), all
    on the scripted backend."""
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1"}
    config = {
        "models": [
            {"name": "qwen3", "backend": backend, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"},
            {
                "name": "deepseek",
                "backend": backend,
                "reasoning_parser": "deepseek-r1",
                "tool_call_parser": "deepseekv3",
            },
            {"name": "gpt-oss", "backend": backend, "reasoning_parser": "gpt-oss", "tool_call_parser": "gpt-oss"},
            {"name": "pythonic", "backend": backend, "tool_call_parser": "pythonic"},
            {"name": "on-vllm", "backend": {**backend, "server": "vllm"}, "reasoning_parser": "qwen3"},
            {"name": "on-other", "backend": {**backend, "server": "other"}},
            {
                "name": "qwen3-template",
                "backend": {**backend, "server": "vllm"},
                "chat_template": str(REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"),
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            },
        ]
    }
    return serve(create_app(Config.model_validate(config)))


@pytest.fixture(scope="module")
def client(messages_gateway) -> anthropic.Anthropic:
    return anthropic_client(messages_gateway)


def blocks(message) -> list[tuple]:
    """A message's content blocks without their ids."""
    out = []
    for block in message.content:
        if block.type == "thinking":
            out.append(("thinking", block.thinking.strip(), bool(block.signature)))
        elif block.type == "text":
            out.append(("text", block.text))
        elif block.type == "tool_use":
            assert block.id.startswith("toolu_")
            out.append(("tool_use", block.name, block.input))
    return out


def expected_call(family: str) -> list[tuple]:
    thinking = [("thinking", THOUGHT, True)] if THINKS[family] else []
    return [*thinking, ("tool_use", "Bash", CALL_INPUT)]


def check_order(types: list[str]) -> None:
    """message_start, then whole blocks, then message_delta and message_stop
    (pings aside: the SDK does not yield them)."""
    types = [kind for kind in types if kind != "ping"]
    assert types[0] == "message_start"
    assert types[-2:] == ["message_delta", "message_stop"]
    open_block = False
    for kind in types[1:-2]:
        if kind == "content_block_start":
            assert not open_block
            open_block = True
        elif kind == "content_block_delta":
            assert open_block
        else:
            assert kind == "content_block_stop" and open_block
            open_block = False
    assert not open_block


@pytest.mark.parametrize("chunk_size", [1, 3, 1000])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tool_call_with_thinking_every_way(client, fake, family, chunk_size):
    fake.script(FAMILIES[family], chunk_size=chunk_size)
    request = {"model": family, "max_tokens": 1024, "messages": ASK, "tools": [BASH]}

    message = client.messages.create(**request)
    assert blocks(message) == expected_call(family)
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 11)

    types, fragments = [], []
    for event in client.messages.create(stream=True, **request):
        types.append(event.type)
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            fragments.append(event.delta.partial_json)
        if event.type == "message_delta":
            assert event.delta.stop_reason == "tool_use"
            assert event.usage.output_tokens == 11
    check_order(types)
    assert orjson.loads("".join(fragments)) == CALL_INPUT

    with client.messages.stream(**request) as stream:
        final = stream.get_final_message()
    assert blocks(final) == expected_call(family)
    assert final.stop_reason == "tool_use"


@pytest.mark.parametrize("chunk_size", [1, 4])
def test_text_turn_with_thinking(client, fake, chunk_size):
    fake.script("<think>Easy.</think>Hello there.<|im_end|>", chunk_size=chunk_size)
    request = {
        "model": "qwen3",
        "max_tokens": 100,
        "messages": ASK,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    message = client.messages.create(**request)
    assert blocks(message) == [("thinking", "Easy.", True), ("text", "Hello there.")]
    assert message.stop_reason == "end_turn"
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": True, "thinking": True}
    with client.messages.stream(**request) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == "Hello there."
    assert blocks(final) == blocks(message)


def test_history_with_thinking_and_tool_results_reaches_the_backend(client, fake):
    fake.script("It printed hello.")
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": THOUGHT, "signature": "parsegate"},
                {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": CALL_INPUT},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "hello"}]},
    ]
    message = client.messages.create(
        model="qwen3", max_tokens=100, messages=history, tools=[BASH], system="Be brief.", thinking={"type": "disabled"}
    )
    assert blocks(message) == [("text", "It printed hello.")]
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": False, "thinking": False}
    sent = fake.last_body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[2]["tool_calls"][0]["id"] == "toolu_01" and sent[2]["reasoning_content"] == THOUGHT
    assert sent[3] == {"role": "tool", "tool_call_id": "toolu_01", "content": "hello"}


def test_max_tokens_stop_reason(client, fake):
    fake.script("<think>Long", chunk_size=2)
    fake.finish_reason = "length"
    request = {"model": "qwen3", "max_tokens": 3, "messages": ASK}
    assert client.messages.create(**request).stop_reason == "max_tokens"
    with client.messages.stream(**request) as stream:
        assert stream.get_final_message().stop_reason == "max_tokens"
    assert fake.last_body["max_tokens"] == 3


@pytest.mark.parametrize("model", ["qwen3", "qwen3-template"])  # chat completions, and text completions
@pytest.mark.parametrize("field", ["stop_reason", "matched_stop"])  # vLLM's name, SGLang's name
def test_stop_sequence_stop_reason(messages_gateway, client, fake, field, model):
    fake.script("<think>Count.</think>1, 2, 3", chunk_size=2)
    fake.stop_fields = {field: "4"}
    request = {"model": model, "max_tokens": 100, "messages": ASK, "stop_sequences": ["4", "five"]}
    message = client.messages.create(**request)
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "4")
    assert blocks(message)[-1] == ("text", "1, 2, 3")
    with client.messages.stream(**request) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", "4")
    assert fake.last_body["stop"] == ["4", "five"]
    chat = {"model": "qwen3", "messages": ASK, "stop": ["4"]}
    answer = httpx.post(f"{messages_gateway}/v1/chat/completions", json=chat, timeout=10).json()
    assert answer["choices"][0]["finish_reason"] == "stop"  # the chat surface says what it always said


def test_a_stop_token_or_an_unasked_string_is_end_turn(client, fake):
    request = {"model": "qwen3", "max_tokens": 100, "messages": ASK, "stop_sequences": ["4"]}
    for stop_fields in ({"stop_reason": 151645}, {"matched_stop": "five"}, {"stop_reason": None}):
        fake.script("1, 2, 3")
        fake.stop_fields = stop_fields
        message = client.messages.create(**request)
        assert (message.stop_reason, message.stop_sequence) == ("end_turn", None), stop_fields
        with client.messages.stream(**request) as stream:
            final = stream.get_final_message()
        assert (final.stop_reason, final.stop_sequence) == ("end_turn", None), stop_fields


def test_raw_stream_frames_all_have_event_lines(messages_gateway, fake):
    fake.script(FAMILIES["qwen3"], chunk_size=2)
    body = {"model": "qwen3", "max_tokens": 100, "messages": ASK, "tools": [BASH], "stream": True}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219"}
    response = httpx.post(f"{messages_gateway}/v1/messages?beta=true", json=body, headers=headers, timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    frames = [frame for frame in response.text.split("\n\n") if frame]
    for frame in frames:
        event, data = frame.split("\n")
        name = event.removeprefix("event: ")
        assert orjson.loads(data.removeprefix("data: "))["type"] == name
    types = [frame.split("\n")[0].removeprefix("event: ") for frame in frames]
    assert types[:2] == ["message_start", "ping"]
    check_order(types)


def test_a_stream_the_backend_cuts_ends_in_an_error_event(client, fake):
    fake.script("<think>Thinking about", chunk_size=2)
    fake.cut = True
    with pytest.raises(anthropic.APIStatusError) as raised:
        list(client.messages.create(model="qwen3", max_tokens=100, messages=ASK, stream=True))
    assert "ended the stream early" in str(raised.value)


def test_errors_are_anthropic_shaped(messages_gateway, client, fake):
    with pytest.raises(anthropic.NotFoundError) as raised:
        client.messages.create(model="no-such-model", max_tokens=10, messages=ASK)
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "not_found_error"
    response = httpx.post(f"{messages_gateway}/v1/messages", json={"model": "qwen3", "messages": ASK}, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in response.json()["error"]["message"]
    fake.error = (500, b'{"error": {"message": "backend exploded"}}')
    with pytest.raises(anthropic.InternalServerError) as raised:
        client.messages.create(model="qwen3", max_tokens=10, messages=ASK, stream=True)
    assert raised.value.body == {"type": "error", "error": {"type": "api_error", "message": "backend exploded"}}


def test_api_key_as_x_api_key_or_bearer(serve, fake_backend_server, fake):
    _, fake_url = fake_backend_server
    config = {"server": {"api_keys": ["sk-right"]}, "models": [{"name": "m", "backend": {"url": f"{fake_url}/v1"}}]}
    url = serve(create_app(Config.model_validate(config)))
    fake.script("Hi.")
    for client in (
        anthropic_client(url, api_key="sk-right"),
        anthropic_client(url, api_key=None, auth_token="sk-right"),
    ):
        assert blocks(client.messages.create(model="m", max_tokens=10, messages=ASK)) == [("text", "Hi.")]
    wrong = anthropic_client(url, api_key="sk-wrong")
    with pytest.raises(anthropic.AuthenticationError) as raised:
        wrong.messages.create(model="m", max_tokens=10, messages=ASK)
    assert raised.value.body["error"]["type"] == "authentication_error"


def test_count_tokens_asks_a_vllm_tokenizer(client, fake):
    fake.token_count = 123
    counted = client.messages.count_tokens(model="on-vllm", messages=ASK, system="Be brief.", tools=[BASH])
    assert counted.input_tokens == 123
    asked = fake.last_body
    assert asked["messages"] == [{"role": "system", "content": "Be brief."}, *ASK]
    assert asked["tools"][0]["function"]["name"] == "Bash" and asked["add_generation_prompt"] is True


def test_count_tokens_estimates_without_a_tokenizer(client, fake):
    counted = client.messages.count_tokens(model="on-other", messages=ASK)
    assert counted.input_tokens == math.ceil(len(ASK[0]["content"]) / 4)
    assert fake.requests == []


CUT_CALLS = {  # family: (output cut by the token limit inside a call, the input written so far)
    "qwen3": (
        '<tool_call>\n{"name": "Bash", "arguments": {"command": "echo hel',
        {"command": "echo hel"},
    ),
    "qwen3-key": (
        '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls", "timeout": 12',
        {"command": "ls", "timeout": 12},
    ),
    "qwen3-dangling": (
        '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls", "descrip',
        {"command": "ls"},
    ),
    "pythonic": ('[Bash(command="echo hel', {"command": "echo hel"}),
}


@pytest.mark.parametrize("chunk_size", [1, 4, 1000])
@pytest.mark.parametrize("case", sorted(CUT_CALLS))
def test_a_call_cut_by_the_token_limit_keeps_its_input_so_far(client, fake, case, chunk_size):
    text, written = CUT_CALLS[case]
    fake.script(text, chunk_size=chunk_size)
    fake.finish_reason = "length"
    request = {"model": case.split("-")[0], "max_tokens": 20, "messages": ASK, "tools": [BASH]}

    message = client.messages.create(**request)
    assert blocks(message) == [("tool_use", "Bash", written)] and message.stop_reason == "max_tokens"

    types, fragments = [], []
    for event in client.messages.create(stream=True, **request):
        types.append(event.type)
        if event.type == "content_block_delta":
            fragments.append(event.delta.partial_json)
    check_order(types)
    assert orjson.loads("".join(fragments)) == written
    with client.messages.stream(**request) as stream:
        assert blocks(stream.get_final_message()) == [("tool_use", "Bash", written)]
