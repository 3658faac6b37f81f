"""The Responses API (`POST /v1/responses`) through the official `openai`
SDK, against the real gateway on loopback in front of the scripted raw-text
backend: text, reasoning, function and custom tool calls in several format
families, streamed (`responses.create(stream=True)`, `responses.stream`)
and not; the event sequence's invariants; the same final response at
every split of the backend's stream."""

from __future__ import annotations

import json

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import reasoning_format, tool_format
from tests.sdk_clients import openai_client

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/s"},
}
FAMILIES = [  # (reasoning parser, tool-call parser): JSON, Kimi section, DSML, pythonic
    ("qwen3", "qwen25"),
    ("kimi_k2", "kimi_k2"),
    ("deepseek-v3", "deepseekv32"),
    ("qwen3", "pythonic"),
]
HARMONY = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris"}<|call|>'
)
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch"


def reply(reasoning_parser: str, tool_parser: str, thought: str, name: str, arguments: str) -> str:
    """The raw text a model of this family writes: its reasoning, then one call."""
    if tool_parser == "gpt-oss":
        return HARMONY
    think = reasoning_format(reasoning_parser)
    return f"{think.start}{thought}{think.end}" + tool_format(tool_parser).render_call(name, arguments)


@pytest.fixture(scope="module")
def client(serve, fake_backend_server, tmp_path_factory) -> openai.OpenAI:
    """A gateway serving each family as the model named after its tool-call parser."""
    _, backend_url = fake_backend_server
    models = [
        {"name": tool, "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": reasoning, "tool_call_parser": tool}
        for reasoning, tool in [*FAMILIES, ("gpt-oss", "gpt-oss")]
    ]
    store = {"url": str(tmp_path_factory.mktemp("store") / "responses.db")}
    gateway = serve(create_app(Config.model_validate({"models": models, "store": store})))
    return openai_client(gateway)


def events_of(client: openai.OpenAI, **request) -> list:
    return list(client.responses.create(stream=True, **request))


def check_sequence(events: list) -> dict:
    """The invariants of one stream; the final `response` as a dict."""
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert [event.type for event in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type in ("response.completed", "response.incomplete", "response.failed")
    assert not any(
        event.type.startswith("response.") and event.type.endswith(("completed", "failed")) for event in events[:-1]
    )
    added = {event.output_index: event.item.id for event in events if event.type == "response.output_item.added"}
    done = {event.output_index: event.item for event in events if event.type == "response.output_item.done"}
    assert {index: item.id for index, item in done.items()} == added  # every item opened is closed, ids stable
    final = events[-1].response.to_dict()
    assert [done[index].to_dict() for index in sorted(done)] == final["output"]  # done items are complete
    ids = [item["id"] for item in final["output"]] + [item["call_id"] for item in final["output"] if "call_id" in item]
    assert len(ids) == len(set(ids))
    return final


def without_ids(output: list[dict]) -> list[dict]:
    return [{key: value for key, value in item.items() if key not in ("id", "call_id")} for item in output]


def test_plain_text_not_streamed(client, fake):
    fake.script("<think>Greet.</think>Hello there!")
    response = client.responses.create(model="qwen25", input="Hi")
    assert response.status == "completed"
    assert response.output_text == "Hello there!"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.usage.input_tokens == 7 and response.usage.output_tokens == 11
    assert fake.last_body["messages"] == [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize("reasoning_parser, tool_parser", [*FAMILIES, ("gpt-oss", "gpt-oss")])
def test_reasoning_and_call_streamed_and_not(client, fake, reasoning_parser, tool_parser):
    fake.script(
        reply(reasoning_parser, tool_parser, "Need the weather.", "get_weather", '{"city": "Paris"}'), chunk_size=3
    )
    request = {"model": tool_parser, "input": "Weather in Paris?", "tools": [WEATHER]}
    final = check_sequence(events_of(client, **request))
    assert final["status"] == "completed" and final["usage"]["total_tokens"] == 18
    reasoning, call = final["output"]
    assert reasoning["type"] == "reasoning" and reasoning["summary"][0]["text"] == "Need the weather."
    assert (call["type"], call["name"]) == ("function_call", "get_weather")
    assert call["arguments"].replace(" ", "") == '{"city":"Paris"}'
    whole = client.responses.create(**request).to_dict()
    assert without_ids(whole["output"]) == without_ids(final["output"])


def test_responses_stream_helper_accumulates_text_and_reasoning(client, fake):
    fake.script("<think>Greet back.</think>Hello, friend!", chunk_size=2)
    with client.responses.stream(model="qwen25", input="Hi", reasoning={"effort": "high"}) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "Hello, friend!" == final.output_text
    assert final.output[0].type == "reasoning" and final.output[0].summary[0].text == "Greet back."
    assert fake.last_body["reasoning_effort"] == "high"


def test_custom_tool_call_comes_back_as_custom_tool_call(client, fake):
    arguments = '{"input": ' + json.dumps(PATCH) + "}"
    fake.script(reply("qwen3", "qwen25", "Patch it.", "apply_patch", arguments), chunk_size=5)
    request = {"model": "qwen25", "input": "Create hello.txt using apply_patch", "tools": [APPLY_PATCH, WEATHER]}
    events = events_of(client, **request)
    final = check_sequence(events)
    call = final["output"][1]
    assert (call["type"], call["name"], call["input"]) == ("custom_tool_call", "apply_patch", PATCH)
    assert [event.input for event in events if event.type == "response.custom_tool_call_input.done"] == [PATCH]
    offered = fake.last_body["tools"][0]["function"]
    assert offered["name"] == "apply_patch" and offered["parameters"]["required"] == ["input"]
    whole = client.responses.create(**request)
    assert (whole.output[1].type, whole.output[1].input) == ("custom_tool_call", PATCH)


def test_codex_history_becomes_chat_messages(client, fake):
    fake.script("<think></think>Done.")
    history = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {"type": "message", "id": "msg_2", "role": "user", "content": [{"type": "input_text", "text": "Run it"}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Run."}],
            "content": None,
            "encrypted_content": None,
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "exec_command",
            "arguments": '{"cmd": "ls"}',
            "status": "completed",
        },
        {"type": "function_call_output", "id": "fco_1", "call_id": "call_a", "output": "a.txt"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "call_b", "output": "ok"},
        {
            "type": "message",
            "id": "msg_3",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Patched."}],
        },
        {"role": "user", "content": "Thanks"},
    ]
    tools = [
        WEATHER,
        {
            "type": "namespace",
            "name": "agents",
            "description": "",
            "tools": [
                {**WEATHER, "description": "other"},
                {"type": "function", "name": "spawn", "parameters": {"type": "object"}},
            ],
        },
        {"type": "web_search", "external_web_access": False},
    ]
    client.responses.create(model="qwen25", input=history, instructions="Answer in English.", tools=tools, store=False)
    messages = fake.last_body["messages"]
    assert messages[0] == {"role": "system", "content": "Answer in English.\n\nBe brief."}
    assert messages[2]["reasoning_content"] == "Run."
    assert [call["function"] for call in messages[2]["tool_calls"]] == [
        {"name": "exec_command", "arguments": '{"cmd": "ls"}'}
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_a", "content": "a.txt"}
    assert messages[4]["tool_calls"][0]["function"]["arguments"] == json.dumps({"input": PATCH}, separators=(",", ":"))
    assert [message["role"] for message in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert [tool["function"]["name"] for tool in fake.last_body["tools"]] == [
        "get_weather",
        "agents__get_weather",
        "spawn",
    ]


def test_namespaced_call_goes_back_out_by_its_own_name(client, fake):
    fake.script(reply("qwen3", "qwen25", "Spawn.", "spawn", "{}"))
    tools = [
        {
            "type": "namespace",
            "name": "agents",
            "description": "",
            "tools": [{"type": "function", "name": "spawn", "parameters": {"type": "object"}}],
        }
    ]
    call = client.responses.create(model="qwen25", input="go", tools=tools).output[1]
    assert (call.name, call.namespace) == ("spawn", "agents")


def test_request_fields_map_to_chat(client, fake):
    fake.script('<think></think>{"a": 1}')
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    client.responses.create(
        model="qwen25",
        input="json please",
        max_output_tokens=50,
        temperature=0.2,
        top_p=0.9,
        text={"format": {"type": "json_schema", "name": "thing", "schema": schema, "strict": True}},
        tools=[WEATHER],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        include=["reasoning.encrypted_content"],
        prompt_cache_key="k",
        metadata={"a": "b"},
    )
    body = fake.last_body
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["parallel_tool_calls"]) == (
        50,
        0.2,
        0.9,
        False,
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "thing", "schema": schema, "strict": True},
    }
    assert "include" not in body and "prompt_cache_key" not in body and "metadata" not in body


def test_token_limit_ends_incomplete(client, fake):
    fake.script("<think>Long.</think>Hello there, this is long")
    fake.finish_reason = "length"
    final = check_sequence(events_of(client, model="qwen25", input="Hi", max_output_tokens=3))
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}


def test_cut_stream_ends_in_response_failed(client, fake):
    fake.script("<think>Hmm.</think>Partial answ", chunk_size=4)
    fake.cut = True
    events = events_of(client, model="qwen25", input="Hi")
    final = check_sequence(events)
    assert final["status"] == "failed" and "ended the stream early" in final["error"]["message"]
    assert final["error"]["code"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][1]["content"][0]["text"] == "Partial answ"


def test_backend_error_before_streaming_is_an_openai_error(client, fake):
    fake.error = (400, b'{"error": {"message": "context too long", "type": "BadRequestError", "code": 400}}')
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="qwen25", input="Hi", stream=True)


def test_unknown_model_is_404(client, fake):
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="nope", input="Hi")


@pytest.mark.parametrize("reasoning_parser, tool_parser", [("qwen3", "qwen25"), ("gpt-oss", "gpt-oss")])
def test_same_response_at_every_split(client, fake, reasoning_parser, tool_parser):
    text = reply(reasoning_parser, tool_parser, "Need the weather.", "get_weather", '{"city": "Paris"}')
    outputs = []
    for chunk_size in range(1, len(text) + 1):
        fake.script(text, chunk_size=chunk_size)
        final = check_sequence(events_of(client, model=tool_parser, input="Weather?", tools=[WEATHER]))
        outputs.append(without_ids(final["output"]))
    assert all(output == outputs[0] for output in outputs)
    assert [item["type"] for item in outputs[0]] == ["reasoning", "function_call"]


def chunk(delta: dict, finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return (
        b"data: "
        + json.dumps({"id": "up-1", "object": "chat.completion.chunk", "choices": [choice]}).encode()
        + b"\n\n"
    )


def calls_done(events: list) -> tuple[list[dict], list[str]]:
    """The call items `output_item.done` carried, and the arguments of every `function_call_arguments.done`."""
    items = [
        event.item.to_dict()
        for event in events
        if event.type == "response.output_item.done" and event.item.type.endswith("call")
    ]
    return items, [event.arguments for event in events if event.type == "response.function_call_arguments.done"]


@pytest.mark.parametrize("tool_parser", ["qwen25", "kimi_k2", "pythonic"])
def test_a_stream_cut_inside_a_call_never_completes_it(client, fake, tool_parser):
    whole = reply("qwen3", tool_parser, "Need it.", "get_weather", '{"city": "Paris"}')
    fake.script(whole[: whole.index("Paris") + 2], chunk_size=3)
    fake.cut = True
    events = events_of(client, model=tool_parser, input="Weather?", tools=[WEATHER])
    final = check_sequence(events)
    assert final["status"] == "failed"
    items, arguments_done = calls_done(events)
    assert [(item["name"], item["status"]) for item in items] == [("get_weather", "incomplete")]
    assert items[0]["arguments"].replace(" ", "").startswith('{"city":"Pa')
    assert arguments_done == []  # "done" arguments would be a complete call
    assert final["output"][-1] == items[0]


def test_a_call_cut_by_the_token_limit_is_incomplete_streamed_and_not(client, fake):
    fake.script('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa', chunk_size=4)
    fake.finish_reason = "length"
    request = {"model": "qwen25", "input": "Weather?", "tools": [WEATHER]}
    events = events_of(client, **request)
    final = check_sequence(events)
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    items, arguments_done = calls_done(events)
    assert [(item["status"], item["arguments"]) for item in items] == [("incomplete", '{"city": "Pa')]
    assert arguments_done == []
    whole = client.responses.create(**request).to_dict()
    assert without_ids(whole["output"]) == without_ids(final["output"])


def test_a_cut_custom_call_is_incomplete_with_the_input_written_so_far(client, fake):
    arguments = '{"input": ' + json.dumps(PATCH) + "}"
    text = reply("qwen3", "qwen25", "Patch it.", "apply_patch", arguments)
    fake.script(text[: text.index("hello.txt")], chunk_size=5)
    fake.cut = True
    events = events_of(client, model="qwen25", input="Patch", tools=[APPLY_PATCH])
    final = check_sequence(events)
    call = final["output"][-1]
    assert (call["type"], call["status"]) == ("custom_tool_call", "incomplete")
    assert call["input"] == PATCH[: PATCH.index("hello.txt")]
    assert not [event for event in events if event.type.startswith("response.custom_tool_call_input")]


def test_a_backends_own_call_cut_mid_stream_is_incomplete_and_the_one_before_completed(client, fake):
    def call(index: int, arguments: str, name: str | None = None) -> dict:
        function = {"arguments": arguments, **({"name": name} if name else {})}
        return {"tool_calls": [{"index": index, "type": "function", "function": function}]}

    fake.raw_stream = [
        chunk({"role": "assistant", "content": ""}),
        chunk(call(0, '{"city": "Paris"}', "get_weather")),
        chunk(call(1, '{"city": "Ber', "get_weather")),
    ]
    events = events_of(client, model="qwen25", input="Weather?", tools=[WEATHER])
    final = check_sequence(events)
    assert final["status"] == "failed"
    items, arguments_done = calls_done(events)
    assert [(item["status"], item["arguments"]) for item in items] == [
        ("completed", '{"city": "Paris"}'),
        ("incomplete", '{"city": "Ber'),
    ]
    assert arguments_done == ['{"city": "Paris"}']


def text_items(output: list[dict]) -> list[tuple[str, str | None, str]]:
    """(type, status, text) of each item of an output: a reasoning item's summary, a message's content."""
    return [
        (
            item["type"],
            item.get("status"),
            "".join(part["text"] for part in item["summary" if item["type"] == "reasoning" else "content"]),
        )
        for item in output
    ]


def items_done(events: list) -> list[dict]:
    return [event.item.to_dict() for event in events if event.type == "response.output_item.done"]


CUT_TEXTS = [  # (what the model wrote before the end of output, the items it makes)
    (
        "<think>Hmm.</think>Partial answ",
        [("reasoning", "completed", "Hmm."), ("message", "incomplete", "Partial answ")],
    ),
    ("<think>A thought cut sho", [("reasoning", "incomplete", "A thought cut sho")]),
]


@pytest.mark.parametrize("text, expected", CUT_TEXTS)
def test_text_the_token_limit_cuts_is_incomplete_streamed_not_and_stored(client, fake, text, expected):
    fake.script(text)
    fake.finish_reason = "length"
    request = {"model": "qwen25", "input": "Hi", "max_output_tokens": 9}
    events = events_of(client, **request)
    final = check_sequence(events)
    assert final["status"] == "incomplete"
    assert text_items(items_done(events)) == expected and final["output"] == items_done(events)
    assert client.responses.retrieve(final["id"]).to_dict()["output"] == final["output"]
    whole = client.responses.create(**request).to_dict()
    assert text_items(whole["output"]) == expected
    assert client.responses.retrieve(whole["id"]).to_dict()["output"] == whole["output"]


@pytest.mark.parametrize("breaks", ["ends early", "connection dropped", "malformed chunk"])
@pytest.mark.parametrize("text, expected", CUT_TEXTS)
def test_text_a_broken_stream_cuts_is_incomplete_streamed_and_stored(client, fake, breaks, text, expected):
    fake.script(text, chunk_size=4)
    if breaks == "ends early":
        fake.cut = True
    elif breaks == "connection dropped":
        fake.drop_after = 1 + -(-len(text) // 4)  # after the role chunk and the text's, before the finish chunk
    else:
        fake.raw_stream = [chunk({"role": "assistant", "content": text}), b"data: {not json\n\n"]
    events = events_of(client, model="qwen25", input="Hi")
    final = check_sequence(events)
    assert final["status"] == "failed"
    assert text_items(items_done(events)) == expected and final["output"] == items_done(events)
    assert client.responses.retrieve(final["id"]).to_dict()["output"] == final["output"]
