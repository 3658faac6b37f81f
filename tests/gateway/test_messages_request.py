"""An Anthropic Messages request becomes the internal chat request: what the
backend is asked, for the request shapes Claude Code and the SDKs send."""

from __future__ import annotations

import orjson
import pytest

from gateway.api.messages_request import CountTokensRequest, read_messages_request
from gateway.ops.errors import ApiError

BASH = {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {}}}


def chat(body: dict, checked=None) -> dict:
    args = (orjson.dumps(body),) if checked is None else (orjson.dumps(body), checked)
    return read_messages_request(*args)[1]


def request(**fields) -> dict:
    return {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **fields}


def test_system_blocks_and_system_messages_become_one_leading_system_message_without_the_billing_header():
    body = request(
        system=[
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328.593; cc_entrypoint=sdk-cli;"},
            {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}},
        ],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "go"}]},
            {"role": "system", "content": "# Environment"},
        ],
    )
    messages = chat(body)["messages"]
    assert messages == [
        {"role": "system", "content": "You are an agent.\n\n# Environment"},
        {"role": "user", "content": "<reminder>\ngo"},
    ]


def test_tool_use_tool_result_and_thinking_history():
    body = request(
        messages=[
            {"role": "user", "content": "run it"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should run it.", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "echo hello"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello", "cache_control": {}},
                    {"type": "text", "text": "and now?"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "false"}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "is_error": True,
                        "content": [{"type": "text", "text": "exit 1"}],
                    }
                ],
            },
        ],
        tools=[BASH],
    )
    messages = chat(body)["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I should run it.",
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"echo hello"}'}}
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "hello"}
    assert messages[3] == {"role": "user", "content": "and now?"}
    assert messages[5] == {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: exit 1"}


# (id sent, id the backend gets): the gateway's encoding of a model's own id
# comes back as that id (docs/api.md#call-ids); any other id is the
# client's and goes up as sent, near misses of the encoding included.
SENT_IDS = [
    ("toolu_enc_functions-2Eget_weather-3A0", "functions.get_weather:0"),
    ("toolu_enc_get_weather-3A1", "get_weather:1"),
    ("toolu_enc_-E6-97-A5-3A2", "\u65e5:2"),
    ("toolu_enc_toolu_enc_x", "toolu_enc_x"),
    ("toolu_01A09q90qw90lq917835lq9", "toolu_01A09q90qw90lq917835lq9"),
    ("functions.get_weather:0", "functions.get_weather:0"),
    ("call.1:x", "call.1:x"),
    ("toolu_enc_x-zz", "toolu_enc_x-zz"),  # not an escape
    ("toolu_enc_a-2D", "toolu_enc_a-2D"),  # `a-` is never encoded
    ("toolu_enc_x-3a0", "toolu_enc_x-3a0"),  # lowercase hex is not the encoding
    ("toolu_enc_-FF", "toolu_enc_-FF"),  # not UTF-8
]


@pytest.mark.parametrize(("sent", "restored"), SENT_IDS)
def test_encoded_ids_come_back_as_the_model_s_own_and_the_client_s_as_sent(sent, restored):
    body = request(
        messages=[
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": sent, "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": sent, "content": "ok"}]},
        ],
        tools=[BASH],
    )
    messages = chat(body)["messages"]
    assert messages[1]["tool_calls"][0]["id"] == restored
    assert messages[2] == {"role": "tool", "tool_call_id": restored, "content": "ok"}


def test_tools_tool_choice_and_parallelism():
    deferred = {**BASH, "name": "Later", "defer_loading": True}
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    payload = chat(
        request(
            tools=[{**BASH, "cache_control": {"type": "ephemeral"}}, deferred, server_tool],
            tool_choice={"type": "tool", "name": "Bash", "disable_parallel_tool_use": True},
        )
    )
    assert payload["tools"] == [
        {
            "type": "function",
            "function": {"name": "Bash", "parameters": BASH["input_schema"], "description": "Run a command"},
        }
    ]
    assert payload["tool_choice"] == {"type": "function", "function": {"name": "Bash"}}
    assert payload["parallel_tool_calls"] is False
    assert chat(request(tools=[BASH], tool_choice={"type": "any"}))["tool_choice"] == "required"
    assert chat(request(tools=[BASH], tool_choice={"type": "none"}))["tool_choice"] == "none"
    assert chat(request(tools=[BASH], tool_choice={"type": "auto"}))["tool_choice"] == "auto"


def test_a_deferred_tool_is_offered_from_the_turn_a_tool_reference_loads_it():
    """Claude Code's ToolSearch: `defer_loading` tools stay out of the
    prompt until a tool result's `tool_reference` names them (they used to
    be a 400, and Claude then dropped the beta and sent every tool in full)."""
    search = {**BASH, "name": "ToolSearch"}
    weather = {**BASH, "name": "mcp__weather__forecast", "defer_loading": True}
    other = {**BASH, "name": "mcp__mail__send", "defer_loading": True}
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    before = chat(request(messages=asked, tools=[search, weather, other]))
    assert [tool["function"]["name"] for tool in before["tools"]] == ["ToolSearch"]
    found = [
        *asked,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {}}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": "mcp__weather__forecast"}],
                }
            ],
        },
    ]
    for checked in (None, CountTokensRequest):
        after = chat({**request(messages=found, tools=[search, weather, other])}, checked)
        assert [tool["function"]["name"] for tool in after["tools"]] == ["ToolSearch", "mcp__weather__forecast"]
        assert after["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "content": "Tool mcp__weather__forecast loaded: it is among the tools now.",
        }


def test_output_config_format_becomes_the_backends_json_schema_constraint():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    payload = chat(request(output_config={"effort": "low", "format": {"type": "json_schema", "schema": schema}}))
    assert payload["response_format"] == {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
    with pytest.raises(ApiError) as caught:
        chat(request(output_config={"format": {"type": "text"}}))
    assert caught.value.status == 400 and caught.value.body["error"]["param"] == "output_config.format"


@pytest.mark.parametrize("tools", [None, [{**BASH, "defer_loading": True}]])
def test_tool_choice_any_with_no_tool_to_call_is_refused_in_the_clients_words(tools):
    with pytest.raises(ApiError) as refused:
        chat(request(tools=tools, tool_choice={"type": "any"}))
    assert refused.value.status == 400
    assert str(refused.value) == 'tool_choice is {"type": "any"} but the request offers no tools'


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, {"enable_thinking": True, "thinking": True}),
        ({"thinking": {"type": "disabled"}}, {"enable_thinking": False, "thinking": False}),
        ({"thinking": {"type": "adaptive", "display": "updates"}}, None),
        (
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}},
            {"enable_thinking": True, "thinking": True},
        ),
    ],
)
def test_thinking_switches(fields, expected):
    payload = chat(request(**fields))
    assert payload.get("chat_template_kwargs") == expected
    effort = fields.get("output_config", {}).get("effort")
    assert payload.get("reasoning_effort") == ("high" if effort else None)


def test_sampling_fields_kept_and_anthropic_only_fields_not_forwarded():
    payload = chat(
        request(
            stream=True,
            stop_sequences=["END"],
            temperature=0.5,
            top_p=0.9,
            top_k=20,
            metadata={"user_id": "u"},
            context_management={"edits": []},
            unknown_field=1,
        )
    )
    assert payload == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 20,
        "stop": ["END"],
    }


def test_images_go_to_the_backend_as_image_url_parts():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
    messages = chat(request(messages=[{"role": "user", "content": [image, {"type": "text", "text": "what?"}]}]))[
        "messages"
    ]
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                {"type": "text", "text": "what?"},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        (request(messages=[]), "messages"),
        (request(messages=[{"role": "tool", "content": "x"}]), "messages"),
        (request(messages=[{"role": "user", "content": [{"type": "document"}]}]), "messages"),
        (request(tool_choice={"type": "sometimes"}), "tool_choice"),
        (request(tool_choice={"type": "tool", "name": "Missing"}, tools=[BASH]), "tool_choice"),
    ],
)
def test_malformed_requests_are_400(body, param):
    with pytest.raises(ApiError) as raised:
        chat(body)
    assert raised.value.status == 400
    assert raised.value.body["error"]["param"] == param


def test_count_tokens_needs_no_max_tokens():
    payload = chat({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, CountTokensRequest)
    assert "max_tokens" not in payload
