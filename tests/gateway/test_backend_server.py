"""`backend.server` through the real gateway, with the official `openai`
client: the `tool_choice` and constraint each kind of server is sent, the
`guided_decoding` it implies, and a plain vLLM (which refuses `"auto"`)
serving tool calls end to end."""

from __future__ import annotations

import openai
import pytest
import yaml

from gateway.app import create_app
from gateway.ops.config import Config, ConfigError, load_config
from tests.fake_backend import VLLM_AUTO_REFUSED
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TOOLS, both_ways
from tests.sdk_clients import openai_client

ABSENT = object()  # the client sends no tool_choice / the backend gets none
SERVERS = ("vllm", "sglang", "llamacpp", "other")
CONSTRAINT_FIELDS = {"structured_outputs", "response_format", "json_schema", "grammar"}

# (server, client tool_choice) -> the tool_choice sent upstream
UPSTREAM = {
    ("vllm", ABSENT): "none",
    ("vllm", "auto"): "none",
    ("vllm", "none"): "none",
    ("vllm", "required"): "none",
    ("sglang", ABSENT): ABSENT,
    ("sglang", "auto"): "auto",
    ("sglang", "none"): "none",
    ("sglang", "required"): "auto",
    # llama-server parses calls itself on "auto" and refuses a grammar with
    # tools unless the choice is "none" (tests/e2e): it always gets "none".
    ("llamacpp", ABSENT): "none",
    ("llamacpp", "auto"): "none",
    ("llamacpp", "none"): "none",
    ("llamacpp", "required"): "none",
    ("other", ABSENT): ABSENT,
    ("other", "auto"): "auto",
    ("other", "none"): "none",
    ("other", "required"): "required",
}
# server -> the constraint field sent with "required" (its default guided_decoding)
REQUIRED_CONSTRAINT = {
    "vllm": "structured_outputs",
    "sglang": "response_format",
    "llamacpp": "grammar",
    "other": None,
}


def entry(name: str, url: str, server: str, **extra) -> dict:
    return {
        "name": name,
        "backend": {"url": f"{url}/v1", "server": server},
        "reasoning_parser": "qwen3",
        "tool_call_parser": "qwen25",
        **extra,
    }


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway with the qwen3 model once per kind of server, plus a vLLM
    entry with its own parsers off and one with guided decoding turned off."""
    _, url = fake_backend_server
    models = [entry(f"qwen3-{server}", url, server) for server in SERVERS]
    models.append(entry("vllm-unparsed", url, "vllm", reasoning_parser="none", tool_call_parser="none"))
    models.append(entry("vllm-unguided", url, "vllm", guided_decoding="none"))
    app = create_app(Config.model_validate({"models": models}))
    return openai_client(serve(app))


@pytest.mark.parametrize(
    ("server", "choice"), list(UPSTREAM), ids=[f"{server}-{'absent' if c is ABSENT else c}" for server, c in UPSTREAM]
)
def test_each_server_is_sent_the_tool_choice_it_needs(client, fake, server, choice):
    constraint = REQUIRED_CONSTRAINT[server] if choice == "required" else None
    # Thinking is on: the constraint lets the reasoning come first (test_reasoning_under_constraints.py).
    fake.script('<think>\nThe time.\n</think>\n\n[{"name": "get_time", "parameters": {}}]' if constraint else ONE_CALL)
    request = {"model": f"qwen3-{server}", "messages": MESSAGES, "tools": TOOLS}
    if choice is not ABSENT:
        request["tool_choice"] = choice
    reply = client.chat.completions.create(**request).choices[0]
    body = fake.last_body
    assert body.get("tool_choice", ABSENT) == UPSTREAM[server, choice]
    assert body["tools"] == TOOLS  # the chat template always gets the tools
    assert CONSTRAINT_FIELDS & set(body) == ({constraint} if constraint else set())
    if choice == "none":
        assert reply.message.tool_calls is None and "<tool_call>" in reply.message.content
    else:
        assert reply.finish_reason == "tool_calls"


def test_a_plain_vllm_serves_tool_calls_end_to_end(client, fake):
    fake.refuse_auto_tools = True
    result = both_ways(client, fake, ONE_CALL, model="qwen3-vllm", tools=TOOLS)
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert result["reasoning_content"].strip() == "I need the weather tool."
    assert result["finish_reason"] == "tool_calls"
    both_ways(client, fake, ONE_CALL, model="qwen3-vllm", tools=TOOLS, tool_choice="auto")
    assert fake.last_body["tool_choice"] == "none"


def test_without_server_vllm_the_plain_vllm_refusal_names_backend_server(client, fake):
    """More surfaces and both vLLM error bodies: test_vllm_tool_refusal.py."""
    fake.refuse_auto_tools = True
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="qwen3-other", messages=MESSAGES, tools=TOOLS)
    assert "backend.server: vllm" in caught.value.body["message"]
    assert caught.value.body["message"] != VLLM_AUTO_REFUSED["error"]["message"]


def test_a_vllm_model_without_a_tool_parser_sends_the_choice_as_it_came(client, fake):
    fake.script("It is sunny.")
    client.chat.completions.create(model="vllm-unparsed", messages=MESSAGES, tools=TOOLS)
    assert "tool_choice" not in fake.last_body  # a vLLM running its own tool parser keeps parsing
    client.chat.completions.create(model="vllm-unparsed", messages=MESSAGES, tools=TOOLS, tool_choice="auto")
    assert fake.last_body["tool_choice"] == "auto"


def test_an_explicit_guided_decoding_wins_over_the_servers(client, fake):
    fake.script(ONE_CALL)
    request = {"model": "vllm-unguided", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"}
    reply = client.chat.completions.create(**request).choices[0]
    assert reply.message.tool_calls[0].function.name == "get_weather"  # read by the model's parser
    assert fake.last_body["tool_choice"] == "required" and not CONSTRAINT_FIELDS & set(fake.last_body)
    client.chat.completions.create(model="vllm-unguided", messages=MESSAGES, tools=TOOLS)
    assert fake.last_body["tool_choice"] == "none"  # the server's auto rule still holds


@pytest.mark.parametrize(
    ("backend", "guided", "expected"),
    [
        ({"server": "vllm"}, None, "vllm"),
        ({"server": "sglang"}, None, "sglang"),
        ({"server": "llamacpp"}, None, "llamacpp"),
        ({"server": "other"}, None, "none"),
        ({}, None, None),  # the detected server's, at request time (test_server_detection.py)
        ({"server": "vllm"}, "none", "none"),
        ({"server": "other"}, "sglang", "sglang"),
        ({}, "vllm", "vllm"),
    ],
)
def test_guided_decoding_defaults_to_the_servers_dialect(backend, guided, expected):
    model = {"name": "m", "backend": {"url": "http://127.0.0.1:9/v1", **backend}}
    if guided is not None:
        model["guided_decoding"] = guided
    served = Config.model_validate({"models": [model]}).models[0]
    assert served.guided_decoding == expected
    assert served.backend.server == backend.get("server")


def test_a_catch_all_keeps_its_server():
    model = {"name": "*", "backend": {"url": "http://127.0.0.1:9/v1", "server": "vllm"}}
    routed = Config.model_validate({"models": [model]}).models[0].routed("Qwen/Qwen3-8B")
    assert routed.backend.server == "vllm" and routed.guided_decoding == "vllm"


@pytest.mark.parametrize(
    ("entry_fields", "message"),
    [
        (
            {"backend": {"url": "http://127.0.0.1:9/v1", "server": "tgi"}},
            "models[0].backend.server: Input should be 'vllm', 'sglang', 'llamacpp' or 'other'",
        ),
        (
            {"backend": {"url": "http://127.0.0.1:9/v1", "server": "vllm"}, "guided_decoding": "vLLM"},
            "models[0].guided_decoding: Input should be 'vllm', 'sglang', 'llamacpp' or 'none'",
        ),
        (
            {"backend": {"url": "http://127.0.0.1:9/v1", "server": True}},
            "models[0].backend.server: Input should be 'vllm', 'sglang', 'llamacpp' or 'other'",
        ),
    ],
)
def test_a_bad_server_stops_start_up(tmp_path, entry_fields, message):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "m", **entry_fields}]}))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert message in str(error.value)


def test_the_server_can_come_from_the_environment(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "m", "backend": {"url": "http://127.0.0.1:9/v1"}}]}))
    model = load_config(path, {"PARSEGATE_MODELS__0__BACKEND__SERVER": "vllm"}).models[0]
    assert model.backend.server == "vllm" and model.guided_decoding == "vllm"
