"""Requests the agent surfaces used to accept silently, or answer with a
500: each is now what chat answers, or what the OpenAI / Anthropic APIs
answer. `/v1/responses` through the openai SDK, `/v1/messages` through the
anthropic SDK, against the real gateway in front of the scripted backend."""

from __future__ import annotations

import anthropic
import openai
import orjson
import pytest

from tests.fake_backend import USAGE
from tests.sdk_clients import anthropic_client

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
CLOCK = {"type": "function", "name": "get_time", "parameters": {"type": "object"}}
SEARCH = {"type": "web_search"}  # a hosted tool: dropped, the gateway cannot run it
USER = {"role": "user", "content": "Hi"}


@pytest.fixture(scope="module")
def messages_client(gateway_url: str) -> anthropic.Anthropic:
    return anthropic_client(gateway_url, api_key="client-key")


def responses_400(client: openai.OpenAI, **body) -> dict:
    """The error body of a Responses request that must be a 400, streamed and not."""
    bodies = []
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="qwen3", stream=stream, **{"input": "Hi", **body})
        bodies.append(raised.value.body)
    assert bodies[0] == bodies[1] and bodies[0]["type"] == "invalid_request_error"
    return bodies[0]


@pytest.mark.parametrize("name", [["get_weather"], {"name": "get_weather"}])
def test_an_allowed_tool_whose_name_is_not_a_string_is_a_400(client, fake, name):
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": name}]}
    error = responses_400(client, tools=[WEATHER], tool_choice=choice)
    assert error["param"] == "tool_choice.tools[0].name"
    assert fake.requests == []


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ({"type": "allowed_tools", "mode": "auto", "tools": "get_weather"}, "tool_choice.tools"),
        ({"type": "allowed_tools", "mode": "sometimes", "tools": []}, "tool_choice.mode"),
    ],
)
def test_a_malformed_allowed_tools_is_a_400(client, fake, choice, param):
    assert responses_400(client, tools=[WEATHER], tool_choice=choice)["param"] == param
    assert fake.requests == []


@pytest.mark.parametrize(
    ("tools", "choice", "param"),
    [
        ([], "required", "tool_choice"),
        ([SEARCH], "required", "tool_choice"),
        ([], {"type": "function", "name": "get_weather"}, "tool_choice"),
        ([CLOCK], {"type": "function", "name": "get_weather"}, "tool_choice"),
        ([WEATHER], {"type": "allowed_tools", "mode": "required", "tools": [CLOCK]}, "tool_choice.tools"),
        ([WEATHER], {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "web_search"}]}, "tool_choice.tools"),
    ],
)
def test_a_tool_choice_no_offered_tool_can_meet_is_a_400(client, fake, tools, choice, param):
    error = responses_400(client, tools=tools, tool_choice=choice)
    assert error["param"] == param, error
    assert fake.requests == []


def test_allowed_tools_offers_only_the_tools_it_names(client, fake):
    choice = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_time"}]}
    client.responses.create(model="qwen3", input="Hi", tools=[WEATHER, CLOCK], tool_choice=choice)
    assert [tool["function"]["name"] for tool in fake.last_body["tools"]] == ["get_time"]
    assert fake.last_body["tool_choice"] == "required"


def test_auto_or_none_with_no_tools_still_answers(client, fake):
    for choice in ("auto", "none"):
        assert client.responses.create(model="qwen3", input="Hi", tools=[], tool_choice=choice).status == "completed"
        assert "tool_choice" not in fake.last_body and "tools" not in fake.last_body


def test_duplicate_tool_names_are_a_400_on_every_surface(client, messages_client, fake):
    function = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="qwen3", messages=[USER], tools=[function, function])
    assert raised.value.body["param"] == "tools[1].function.name"
    assert responses_400(client, tools=[WEATHER, CLOCK, WEATHER])["param"] == "tools[2].name"
    tool = {"name": "Bash", "input_schema": {"type": "object"}}
    for stream in (False, True):
        with pytest.raises(anthropic.BadRequestError) as caught:
            messages_client.messages.create(
                model="qwen3", max_tokens=10, messages=[USER], tools=[tool, tool], stream=stream
            )
        assert caught.value.body == {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "tools[1].name: two tools are named 'Bash'"},
        }
    assert fake.requests == []


def user_parts(*parts: dict) -> list[dict]:
    return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Look:"}, *parts]}]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_file", "file_id": "file-123"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_image", "file_id": "file-123", "detail": "auto"},
        {"type": "input_image", "image_url": None, "detail": "auto"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    ],
)
def test_a_content_part_the_gateway_would_drop_is_a_400_naming_it(client, fake, part):
    error = responses_400(client, input=user_parts(part))
    assert error["param"] == "input[0].content[1]"
    assert error["message"].startswith("input[0].content[1]: ")
    assert fake.requests == []


CALL = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}


def output_of(output: object) -> list[dict]:
    return [CALL, {"type": "function_call_output", "call_id": "call_1", "output": output}]


@pytest.mark.parametrize(
    ("items", "param"),
    [
        ([{"type": "message", "role": "user", "content": 5}], "input[0].content"),
        ([{"type": "message", "role": "user", "content": {"text": "Hi"}}], "input[0].content"),
        ([{"type": "message", "role": "user", "content": None}], "input[0].content"),
        ([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": 5}]}], "input[0].content[0]"),
        ([{"type": "message", "role": "assistant", "content": [{"type": "refusal"}]}], "input[0].content[0]"),
        ([{**CALL, "call_id": None}], "input[0].call_id"),
        ([{**CALL, "name": 5}], "input[0].name"),
        ([{**CALL, "arguments": 5}], "input[0].arguments"),
        ([{"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": 5}], "input[0].input"),
        ([CALL, {"type": "function_call_output", "output": "done"}], "input[1].call_id"),
        (output_of(5), "input[1].output"),
        (output_of({"text": "done"}), "input[1].output"),
        (output_of(None), "input[1].output"),
        (output_of([{"type": "input_image", "file_id": "file-123"}]), "input[1].output[0]"),
        ([{"type": "reasoning", "summary": 5}], "input[0].summary"),
        ([{"type": "reasoning", "summary": [{"type": "summary_text"}]}], "input[0].summary[0]"),
        ([{"type": "reasoning", "summary": [{"type": "refusal", "text": "no"}]}], "input[0].summary[0]"),
    ],
)
def test_an_item_the_gateway_could_not_read_whole_is_a_400_naming_it(client, fake, items, param):
    """What the conversion could not read (a content that is neither text
    nor parts, a call or tool output without its call_id) used to become
    empty text, and an image in a tool's output was dropped."""
    error = responses_400(client, input=items)
    assert error["param"] == param and error["message"].startswith(param)
    assert fake.requests == []


def test_refusal_parts_and_a_tools_text_parts_reach_the_backend(client, fake):
    refused = {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    thought = {"type": "reasoning", "summary": [{"type": "refusal", "refusal": "Not this."}]}
    parts = [{"type": "input_text", "text": "line 1\n"}, {"type": "output_text", "text": "line 2"}]
    again = {"type": "message", "role": "user", "content": "Try the tool."}
    client.responses.create(model="qwen3", input=[*user_parts(), thought, refused, again, *output_of(parts)])
    sent = fake.last_body["messages"]
    assert sent[1]["content"] == "I can't." and sent[1]["reasoning_content"] == "Not this."
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "line 1\nline 2"}


def test_a_parallel_round_trip_reaches_the_backend_as_the_one_turn_the_model_wrote(client, fake):
    """Two calls in a row are one assistant message with both calls, then
    both outputs; a text answer after them is the next assistant turn."""
    calls = [
        {"type": "function_call", "call_id": f"call_{n}", "name": "get_weather", "arguments": f'{{"n": {n}}}'}
        for n in (1, 2)
    ]
    outputs = [{"type": "function_call_output", "call_id": f"call_{n}", "output": f"out {n}"} for n in (1, 2)]
    answer = {"type": "message", "role": "assistant", "content": "Both done."}
    client.responses.create(model="qwen3", input=[USER, *calls, *outputs, answer, USER], tools=[WEATHER])
    sent = fake.last_body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "tool", "tool", "assistant", "user"]
    assert [call["id"] for call in sent[1]["tool_calls"]] == ["call_1", "call_2"]
    assert sent[4] == {"role": "assistant", "content": "Both done."}


def test_an_image_outside_a_user_message_is_a_400(client, fake):
    image = {"type": "input_image", "image_url": "https://example.com/cat.png"}
    developer = {"type": "message", "role": "developer", "content": [image]}
    error = responses_400(client, input=[developer, *user_parts()])
    assert error["param"] == "input[0].content[0]"
    assert fake.requests == []


def test_an_image_with_a_url_is_passed_on(client, fake):
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
    client.responses.create(model="qwen3", input=user_parts(image))
    assert fake.last_body["messages"][-1]["content"] == [
        {"type": "text", "text": "Look:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]


NO_CHOICES = [  # a stream whose only chunk carries the usage
    b"data: "
    + orjson.dumps({"id": "up-1", "object": "chat.completion.chunk", "choices": [], "usage": USAGE})
    + b"\n\n",
    b"data: [DONE]\n\n",
]


def test_a_backend_answer_with_no_choice_fails_the_same_streamed_or_not(client, messages_client, fake):
    fake.script()  # no reply: `choices: []`
    with pytest.raises(openai.APIStatusError) as raised:
        client.responses.create(model="qwen3", input="Hi")
    assert raised.value.status_code == 502 and raised.value.body["type"] == "upstream_error"
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="qwen3", messages=[USER])
    assert raised.value.status_code == 502 and raised.value.body["code"] == "upstream_invalid_response"
    with pytest.raises(anthropic.APIStatusError) as caught:
        messages_client.messages.create(model="qwen3", max_tokens=10, messages=[USER])
    assert caught.value.status_code == 502 and caught.value.body["error"]["type"] == "api_error"
    assert "answered no choices" in caught.value.body["error"]["message"]

    fake.raw_stream = NO_CHOICES
    events = list(client.responses.create(model="qwen3", input="Hi", stream=True))
    assert events[-1].type == "response.failed"
    assert "ended the stream early" in events[-1].response.error.message
    with pytest.raises(anthropic.APIStatusError, match="ended the stream early"):
        list(messages_client.messages.create(model="qwen3", max_tokens=10, messages=[USER], stream=True))


ODD_FINISH = {"a": 1}  # a finish_reason that is not a string


def test_a_finish_reason_that_is_not_a_string_is_a_malformed_answer_on_every_surface(client, messages_client, fake):
    """The backend's finish_reason is a string or null; anything else is
    an invalid answer (502) or, streamed, a malformed chunk that ends the
    stream with the surface's own failure, what came before it kept. It
    used to be a 500 on Responses and Messages, and a stream cut with no
    final event."""
    answer = {"id": "up-1", "choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": ODD_FINISH}]}
    fake.error = (200, orjson.dumps(answer))
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="qwen3", messages=[USER])
    assert raised.value.status_code == 502 and raised.value.body["code"] == "upstream_invalid_response"
    with pytest.raises(openai.APIStatusError) as raised:
        client.responses.create(model="qwen3", input="Hi")
    assert raised.value.status_code == 502 and raised.value.body["code"] == "upstream_invalid_response"
    with pytest.raises(anthropic.APIStatusError) as caught:
        messages_client.messages.create(model="qwen3", max_tokens=10, messages=[USER])
    assert caught.value.status_code == 502 and caught.value.body["error"]["type"] == "api_error"

    fake.error = None
    good = {"choices": [{"index": 0, "delta": {"content": "</think>Partial"}, "finish_reason": None}]}
    odd = {"choices": [{"index": 0, "delta": {}, "finish_reason": ODD_FINISH}]}
    fake.raw_stream = [b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in (good, odd)] + [b"data: [DONE]\n\n"]
    with pytest.raises(openai.APIError, match="malformed chunk"):
        list(client.chat.completions.create(model="qwen3", messages=[USER], stream=True))
    events = list(client.responses.create(model="qwen3", input="Hi", stream=True))
    assert events[-1].type == "response.failed" and events[-1].response.error.code == "upstream_malformed"
    assert events[-1].response.output[0].content[0].text == "Partial"
    with pytest.raises(anthropic.APIStatusError, match="malformed chunk"):
        list(messages_client.messages.create(model="qwen3", max_tokens=10, messages=[USER], stream=True))


def test_hosted_tool_history_is_replayed_as_text_the_model_can_read(client, fake):
    """A session moved from OpenAI keeps the items its hosted tools left:
    each is text of the assistant's turn, an image result named, not sent."""
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "paris weather"},
    }
    shell = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "c1",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"]},
    }
    shell_output = {"type": "local_shell_call_output", "id": "lsho_1", "output": "a.txt\nb.txt"}
    image = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo" * 200}
    answer = {"type": "message", "role": "assistant", "content": "It is sunny."}
    client.responses.create(model="qwen3", input=[USER, search, shell, shell_output, image, answer, USER])
    sent = fake.last_body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"].split("\n") == [
        '[web_search_call] {"action":{"type":"search","query":"paris weather"}}',
        '[local_shell_call] {"call_id":"c1","action":{"type":"exec","command":["ls"]}}',
        '[local_shell_call_output] {"output":"a.txt\\nb.txt"}',
        '[image_generation_call] {"result":"(an image or file of 2200 characters, not replayed)"}',
        "It is sunny.",
    ]


def test_tools_added_by_input_items_are_offered_with_the_requests_own(client, fake):
    """`additional_tools` and a client tool search's `tool_search_output`
    make tools available from that item on (newer Codex sends both)."""
    forecast = {"type": "function", "name": "forecast", "parameters": {"type": "object"}}
    added = {"type": "additional_tools", "role": "developer", "tools": [CLOCK]}
    found = [
        {"type": "tool_search_call", "call_id": "ts_1", "execution": "client", "arguments": {"query": "weather"}},
        {"type": "tool_search_output", "call_id": "ts_1", "execution": "client", "tools": [forecast]},
    ]
    client.responses.create(model="qwen3", input=[USER, added, *found, USER], tools=[WEATHER])
    body = fake.last_body
    assert [tool["function"]["name"] for tool in body["tools"]] == ["get_weather", "get_time", "forecast"]
    assert body["messages"][1]["content"].startswith('[tool_search_call] {"call_id":"ts_1"')
    error = responses_400(
        client,
        input=[USER, {"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": 5}]}],
    )
    assert error["param"] == "input[1].tools[0].name"
