"""A backend running its own parsers (vLLM `--reasoning-parser` /
`--enable-auto-tool-choice`, SGLang `--tool-call-parser`) already sends
`reasoning_content` / `reasoning` and structured `tool_calls`: the gateway
passes them through instead of parsing twice, with its own call ids,
indices and finish_reason, streamed and not."""

from __future__ import annotations

import pytest

from tests.gateway.test_gateway_e2e import MESSAGES, TOOLS, collect, message_result, streamed_result

WEATHER_CALL_DELTAS = [
    {
        "tool_calls": [
            {
                "index": 0,
                "id": "chatcmpl-tool-a1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ]
    },
    {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
    {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
]
TIME_CALL_DELTAS = [
    {
        "tool_calls": [
            {
                "index": 1,
                "id": "chatcmpl-tool-b2",
                "type": "function",
                "function": {"name": "get_time", "arguments": '{"zone": "CET"}'},
            }
        ]
    },
]


def both_ways(client, fake, *deltas: dict, model: str = "qwen3") -> dict:
    fake.script_parsed(*deltas)
    request = {"model": model, "messages": MESSAGES, "tools": TOOLS}
    whole = message_result(client.chat.completions.create(**request).choices[0])
    assert streamed_result(collect(client.chat.completions.create(stream=True, **request))[0]) == whole
    return whole


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_backend_reasoning_and_tool_calls_pass_through(client, fake, field):
    result = both_ways(
        client,
        fake,
        {field: "The user wants "},
        {field: "<tool_call> the weather."},
        *WEATHER_CALL_DELTAS,
        *TIME_CALL_DELTAS,
    )
    assert result == {
        "reasoning_content": "The user wants <tool_call> the weather.",  # not parsed again
        "content": None,
        "tool_calls": [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})],
        "finish_reason": "tool_calls",  # the backend said "stop"; the turn ended in calls
    }


def test_backend_call_ids_are_replaced_by_ours(client, fake):
    fake.script_parsed(*WEATHER_CALL_DELTAS)
    reply = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS)
    assert reply.choices[0].message.tool_calls[0].id.startswith("call_")  # message_result checks every call


def test_backend_reasoning_then_raw_tool_call_text_is_parsed_by_our_tool_parser(client, fake):
    """A backend with only its reasoning parser on: the content still holds
    the model's raw tool-call text, which our tool-call parser reads."""
    result = both_ways(
        client,
        fake,
        {"reasoning_content": "Weather, then."},
        {"content": '<tool_call>\n{"name": "get_weather", '},
        {"content": '"arguments": {"city": "Oslo"}}\n</tool_call>'},
    )
    assert result["reasoning_content"] == "Weather, then." and result["content"] is None
    assert result["tool_calls"] == [("get_weather", {"city": "Oslo"})]
    assert result["finish_reason"] == "tool_calls"


def test_content_next_to_backend_tool_calls_is_passed_as_is(client, fake):
    result = both_ways(
        client,
        fake,
        {"reasoning_content": "Look it up."},
        {"content": "Checking <think>now</think>."},
        *WEATHER_CALL_DELTAS,
    )
    assert result["content"] == "Checking <think>now</think>."
    assert result["reasoning_content"] == "Look it up."
    assert result["tool_calls"] == [("get_weather", {"city": "Paris"})]


def test_model_without_parsers_maps_backend_fields(client, fake):
    result = both_ways(client, fake, {"content": "On it."}, *WEATHER_CALL_DELTAS, *TIME_CALL_DELTAS, model="plain")
    assert result == {
        "reasoning_content": None,
        "content": "On it.",
        "tool_calls": [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})],
        "finish_reason": "tool_calls",
    }


def test_backend_reasoning_with_plain_answer(client, fake):
    result = both_ways(client, fake, {"reasoning_content": "Easy."}, {"content": "Sunny"}, {"content": " in Paris."})
    assert result == {
        "reasoning_content": "Easy.",
        "content": "Sunny in Paris.",
        "tool_calls": [],
        "finish_reason": "stop",
    }


def test_backend_calls_after_our_parsed_calls_keep_distinct_indices(client, fake):
    """Streamed raw text with a call, then the backend's own structured call:
    two calls, indices 0 and 1, each with its own id."""
    fake.script_parsed(
        {"content": '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'}, *WEATHER_CALL_DELTAS
    )
    stream = client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True)
    choice = collect(stream)[0]
    assert [(index, call["name"]) for index, call in sorted(choice["calls"].items())] == [
        (0, "get_time"),
        (1, "get_weather"),
    ]
    assert choice["calls"][0]["id"] != choice["calls"][1]["id"]
    assert streamed_result(choice)["tool_calls"] == [("get_time", {}), ("get_weather", {"city": "Paris"})]


def test_arguments_sent_as_an_object_become_json_text(client, fake):
    call = {
        "index": 0,
        "id": "x",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Köln"}},
    }
    result = both_ways(client, fake, {"tool_calls": [call]})
    assert result["tool_calls"] == [("get_weather", {"city": "Köln"})]
