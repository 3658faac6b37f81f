"""The Responses API over a WebSocket (gateway/api/responses_socket.py):
`response.create` messages in, the SSE stream's events out as JSON
messages, a connection that keeps its responses for `store: false`, and
the refusals a client acts on (401 on the upgrade, 426 with the transport
off, error messages that leave the connection open), and compaction as
over HTTP."""

from __future__ import annotations

import threading

import httpx
import orjson
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from gateway.api.compaction import SUMMARY_PROMPT
from gateway.api.compaction_seal import EXPANDED_HEADING
from gateway.app import create_app
from gateway.ops.config import Config

KEY = "key-socket"
REPLY = '<think>Find it.</think>Looking.<tool_call>\n{"name": "grep", "arguments": {"pattern": "fizz"}}\n</tool_call>'
GREP = {
    "type": "function",
    "name": "grep",
    "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
}
FINAL = ("response.completed", "response.failed", "response.incomplete", "error")


def socket_url(base: str) -> str:
    return base.replace("http://", "ws://", 1) + "/v1/responses"


def turn(socket: ClientConnection, **fields: object) -> list[dict]:
    """One `response.create` and the messages answering it, up to its final one."""
    socket.send(orjson.dumps({"type": "response.create", **fields}).decode())
    messages = []
    while not messages or messages[-1]["type"] not in FINAL:
        messages.append(orjson.loads(socket.recv(timeout=30)))
    return messages


def sse_events(base: str, body: dict, headers: dict | None = None) -> list[dict]:
    with httpx.stream("POST", f"{base}/v1/responses", json={**body, "stream": True}, headers=headers) as answer:
        lines = [line for line in answer.iter_lines() if line.startswith("data: ")]
    return [orjson.loads(line[len("data: ") :]) for line in lines]


def without_ids(value: object) -> object:
    """`value` with what differs between two runs of one reply left out: ids and times."""
    if isinstance(value, dict):
        return {
            key: without_ids(item)
            for key, item in value.items()
            if key not in ("id", "item_id", "call_id", "created_at")
        }
    if isinstance(value, list):
        return [without_ids(item) for item in value]
    return value


@pytest.fixture(scope="module")
def keyed_gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    _, backend_url = fake_backend_server
    config = {
        "server": {"api_keys": [KEY]},
        "store": {"url": str(tmp_path_factory.mktemp("store") / "responses.db")},
        "models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}],
    }
    return serve(create_app(Config.model_validate(config)))


def test_a_turn_gets_the_same_events_as_the_sse_stream(gateway_url, fake):
    body = {"model": "qwen3", "input": "Find fizz_buzz()", "tools": [GREP], "store": False}
    fake.script(REPLY)
    streamed = sse_events(gateway_url, body)
    with connect(socket_url(gateway_url)) as socket:
        framed = turn(socket, **body)
    assert [event["type"] for event in framed] == [event["type"] for event in streamed]
    assert "response.function_call_arguments.done" in [event["type"] for event in framed]
    assert without_ids(framed) == without_ids(streamed)
    assert framed[-1]["response"]["output"][2]["arguments"] == '{"pattern": "fizz"}'


def test_a_warm_up_makes_a_response_without_the_model_and_the_next_turn_continues_it(gateway_url, fake):
    fake.script("Found it.")
    with connect(socket_url(gateway_url)) as socket:
        warm = turn(socket, model="qwen3", input="You grep.", instructions="Be brief.", store=False, generate=False)
        assert [event["type"] for event in warm] == ["response.created", "response.in_progress", "response.completed"]
        assert warm[-1]["response"]["output"] == [] and warm[-1]["response"]["status"] == "completed"
        assert fake.requests == []
        warm_id = warm[-1]["response"]["id"]
        answered = turn(socket, model="qwen3", input="Find it.", previous_response_id=warm_id, store=False)
    assert answered[-1]["response"]["previous_response_id"] == warm_id
    assert fake.last_body["messages"] == [
        {"role": "user", "content": "You grep."},
        {"role": "user", "content": "Find it."},
    ]


def test_store_false_turns_continue_from_the_connections_own_responses(gateway_url, fake):
    fake.script(REPLY, "It is in fizz.py.")
    with connect(socket_url(gateway_url)) as socket:
        first = turn(socket, model="qwen3", input="Find fizz_buzz()", tools=[GREP], store=False)
        call = first[-1]["response"]["output"][-1]
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "fizz.py:1"}
        second = turn(
            socket,
            model="qwen3",
            input=[output],
            tools=[GREP],
            previous_response_id=first[-1]["response"]["id"],
            store=False,
        )
    assert second[-1]["type"] == "response.completed"
    messages = fake.last_body["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "tool"]
    assert messages[0]["content"] == "Find fizz_buzz()"
    assert messages[1]["tool_calls"][0]["function"] == {"name": "grep", "arguments": '{"pattern": "fizz"}'}
    assert messages[2] == {"role": "tool", "tool_call_id": call["call_id"], "content": "fizz.py:1"}
    # Over HTTP, nothing was stored: only the connection kept it.
    refused = httpx.post(
        f"{gateway_url}/v1/responses",
        json={"model": "qwen3", "input": "Again", "previous_response_id": first[-1]["response"]["id"], "store": False},
    )
    assert refused.status_code == 404


def test_a_refused_turn_is_an_error_message_and_the_connection_goes_on(gateway_url, fake):
    fake.script("Hello.")
    with connect(socket_url(gateway_url)) as socket:
        missing = turn(socket, input="Hi")
        unknown = turn(socket, model="no-such-model", input="Hi")
        down = turn(socket, model="down", input="Hi", store=False)
        socket.send('{"type": "session.update"}')
        other = orjson.loads(socket.recv(timeout=30))
        answered = turn(socket, model="plain", input="Hi", store=False)
    assert missing == [{"type": "error", "status": 400, "error": missing[0]["error"]}]
    assert missing[0]["error"]["param"] == "model" and missing[0]["error"]["type"] == "invalid_request_error"
    assert unknown[0]["status"] == 404 and unknown[0]["error"]["code"] == "model_not_found"
    assert down[0]["type"] == "error" and down[0]["status"] == 502 and down[0]["error"]["message"]
    assert other["type"] == "error" and other["status"] == 400 and other["error"]["param"] == "type"
    assert answered[-1]["type"] == "response.completed"
    assert answered[-1]["response"]["output"][-1]["content"][0]["text"] == "Hello."


def test_the_upgrade_wants_the_api_key(keyed_gateway, fake):
    fake.script("Hello.")
    with pytest.raises(InvalidStatus) as refused:
        connect(socket_url(keyed_gateway))
    assert refused.value.response.status_code == 401
    assert orjson.loads(refused.value.response.body)["error"]["code"] == "invalid_api_key"
    with connect(socket_url(keyed_gateway), additional_headers={"Authorization": f"Bearer {KEY}"}) as socket:
        answered = turn(socket, model="plain", input="Hi")
    assert answered[-1]["response"]["output"][-1]["content"][0]["text"] == "Hello."
    assert answered[-1]["response"]["store"] is True  # stored as over HTTP: the same key reads it back
    stored = httpx.get(
        f"{keyed_gateway}/v1/responses/{answered[-1]['response']['id']}", headers={"Authorization": f"Bearer {KEY}"}
    )
    assert stored.status_code == 200 and stored.json()["output"] == answered[-1]["response"]["output"]


def test_with_the_transport_off_the_upgrade_is_426_which_codex_takes_as_use_http(serve, fake_backend_server, fake):
    _, backend_url = fake_backend_server
    config = {
        "server": {"responses_websocket": False},
        "models": [{"name": "qwen3", "backend": {"url": f"{backend_url}/v1"}}],
    }
    gateway = serve(create_app(Config.model_validate(config)))
    with pytest.raises(InvalidStatus) as refused:
        connect(socket_url(gateway))
    assert refused.value.response.status_code == 426
    assert orjson.loads(refused.value.response.body)["error"]["code"] == "websocket_disabled"


def test_a_turn_past_the_concurrency_limit_is_a_429_message(serve, fake_backend_server, fake):
    _, backend_url = fake_backend_server
    config = {
        "server": {"max_concurrent_requests": 1},
        "models": [{"name": "qwen3", "backend": {"url": f"{backend_url}/v1"}}],
    }
    gateway = serve(create_app(Config.model_validate(config)))
    fake.script("Hello.")
    fake.hold_headers = True
    body = {"model": "qwen3", "input": "Hi", "store": False}
    held = threading.Thread(target=sse_events, args=(gateway, body))
    with connect(socket_url(gateway)) as socket:
        held.start()
        assert fake.held.wait(timeout=30)
        refused = turn(socket, **body)
        fake.hold_headers = False
        fake.release()
        held.join(timeout=30)
        answered = turn(socket, **body)
    assert refused == [{"type": "error", "status": 429, "error": refused[0]["error"]}]
    assert refused[0]["error"]["code"] == "too_many_requests"
    assert answered[-1]["type"] == "response.completed"


def test_the_connection_keeps_its_8_latest_responses_and_a_continuation_past_them_is_a_404(gateway_url, fake):
    fake.script(*[f"Answer {turn_number}." for turn_number in range(10)])
    with connect(socket_url(gateway_url)) as socket:
        ids = [turn(socket, model="plain", input=f"Q{n}", store=False)[-1]["response"]["id"] for n in range(9)]
        kept = turn(socket, model="plain", input="Again", previous_response_id=ids[1], store=False)
        forgotten = turn(socket, model="plain", input="Again", previous_response_id=ids[0], store=False)
    assert kept[-1]["type"] == "response.completed"
    assert forgotten == [{"type": "error", "status": 404, "error": forgotten[0]["error"]}]
    assert forgotten[0]["error"]["param"] == "previous_response_id"


def test_a_conversation_past_max_body_bytes_is_not_kept(serve, fake_backend_server, fake):
    _, backend_url = fake_backend_server
    config = {
        "server": {"max_body_bytes": 2000},
        "store": {"backend": "none"},
        "models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}],
    }
    gateway = serve(create_app(Config.model_validate(config)))
    fake.script("x" * 800, "y" * 800, "z")
    with connect(socket_url(gateway)) as socket:
        first = turn(socket, model="plain", input="Q1", store=False)[-1]["response"]["id"]
        second = turn(socket, model="plain", input="Q2", previous_response_id=first, store=False)
        third = turn(socket, model="plain", input="Q3", previous_response_id=second[-1]["response"]["id"], store=False)
    assert second[-1]["type"] == "response.completed"  # one answer of 800 bytes: kept
    assert third[0]["type"] == "error" and third[0]["error"]["param"] == "previous_response_id"  # 2: over 2000


def test_a_compaction_trigger_compacts_over_the_socket_and_the_next_turn_reads_the_summary(gateway_url, fake):
    """What Codex sends through its built-in provider when its context fills:
    the history and a `compaction_trigger`, on the connection it holds."""
    fake.script("They asked for fizz_buzz; it is in fizz.py.", "Carrying on.")
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Find fizz_buzz()"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "In fizz.py."}]},
    ]
    with connect(socket_url(gateway_url)) as socket:
        compacted = turn(socket, model="qwen3", input=[*history, {"type": "compaction_trigger"}], store=False)
        after = turn(
            socket,
            model="qwen3",
            input=[compacted[-1]["response"]["output"][0], {"role": "user", "content": "Go on."}],
            store=False,
        )
    assert [event["type"] for event in compacted] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event["sequence_number"] for event in compacted] == [0, 1, 2, 3, 4]
    (item,) = compacted[-1]["response"]["output"]
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("pgc1.")
    summarised = fake.requests[0][1]
    assert [message["content"] for message in summarised["messages"][:2]] == ["Find fizz_buzz()", "In fizz.py."]
    assert summarised["messages"][-1]["role"] == "user" and "summary" in summarised["messages"][-1]["content"]
    assert after[-1]["type"] == "response.completed"
    assert fake.last_body["messages"][0]["content"].endswith("They asked for fizz_buzz; it is in fizz.py.")


def test_a_compaction_trigger_answers_its_item_and_the_next_turn_reads_the_summary(gateway_url, fake):
    history = [{"role": "user", "content": "Write a word counter."}, {"role": "assistant", "content": "Done: cli.py."}]
    fake.script("The counter is in cli.py; tests are next.")
    with connect(socket_url(gateway_url)) as socket:
        compacted = turn(socket, model="plain", input=[*history, {"type": "compaction_trigger"}], store=False)
        assert [event["type"] for event in compacted] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ]
        assert [event["sequence_number"] for event in compacted] == list(range(5))
        [item] = compacted[-1]["response"]["output"]
        assert item["type"] == "compaction" and item["encrypted_content"].startswith("pgc1.")
        assert compacted[3]["item"] == item
        assert fake.last_body["messages"] == [*history, {"role": "user", "content": SUMMARY_PROMPT}]
        assert "tools" not in fake.last_body
        fake.script("Writing the tests.")
        previous = compacted[-1]["response"]["id"]
        answered = turn(socket, model="plain", input="Go on.", previous_response_id=previous, store=False)
    assert answered[-1]["type"] == "response.completed"
    assert fake.last_body["messages"] == [  # the summary stands for the items it compacted
        {"role": "user", "content": f"{EXPANDED_HEADING}\n\nThe counter is in cli.py; tests are next."},
        {"role": "user", "content": "Go on."},
    ]


def test_background_is_refused_over_the_socket(gateway_url, fake):
    with connect(socket_url(gateway_url)) as socket:
        [refused] = turn(socket, model="plain", input="Hi", background=True)
    assert refused["status"] == 400 and refused["error"]["param"] == "background"
    assert fake.requests == []


@pytest.mark.parametrize("compression", ["deflate", None])
def test_every_event_is_a_text_message_compressed_or_not(gateway_url, fake, compression, both_paths):
    """The events go out as text messages, whether the client asked for
    permessage-deflate or not, turn after turn on one connection: framed by
    uvicorn's websockets connection directly (the fast paths) or sent as
    ASGI messages (their fallback)."""
    fake.script(REPLY, chunk_size=3)
    body = {"type": "response.create", "model": "qwen3", "input": "fizz", "tools": [GREP], "store": False}
    with connect(socket_url(gateway_url), compression=compression) as socket:
        for _ in range(2):
            socket.send(orjson.dumps(body).decode())
            kinds: list[str] = []
            while not kinds or kinds[-1] not in FINAL:
                message = socket.recv(timeout=30)
                assert isinstance(message, str)
                kinds.append(orjson.loads(message)["type"])
            assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
            assert "response.function_call_arguments.done" in kinds
