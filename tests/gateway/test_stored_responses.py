"""Stored responses (docs/state.md) through the official openai SDK,
against the real gateway on loopback with a real SQLite file: store,
chains with `previous_response_id` (the backend receives the whole history
in order), retrieve, input items and their pages, delete, conversations,
isolation between API keys, and the requests refused."""

from __future__ import annotations

import httpx
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

KEYS = ["key-alice", "key-bob"]


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    _, backend_url = fake_backend_server
    config = {
        "server": {"api_keys": KEYS},
        "store": {"url": str(tmp_path_factory.mktemp("store") / "responses.db")},
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{backend_url}/v1"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            }
        ],
    }
    return serve(create_app(Config.model_validate(config)))


def sdk(gateway: str, key: str = KEYS[0]) -> openai.OpenAI:
    return openai_client(gateway, api_key=key)


@pytest.fixture
def client(gateway) -> openai.OpenAI:
    return sdk(gateway)


def test_a_stored_response_is_retrieved_listed_and_deleted(client, fake):
    fake.script("<think>Greet.</think>Hello there!")
    created = client.responses.create(model="qwen3", input="Hi", store=True, metadata={"k": "v"})
    assert created.store is True and created.id.startswith("resp_") and len(created.id) > 40
    retrieved = client.responses.retrieve(created.id)
    assert retrieved.to_dict() == created.to_dict()
    items = client.responses.input_items.list(created.id)
    assert [(item.type, item.role, item.content[0].text) for item in items.data] == [("message", "user", "Hi")]
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.retrieve(created.id)
    assert missing.value.body == {
        "message": f"Response with id '{created.id}' not found",
        "type": "invalid_request_error",
        "param": None,
        "code": "not_found",
    }
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)


def numbered_answers(body: dict) -> str:
    """The reply to the request's n-th user message: its reasoning and answer numbered n."""
    turn = sum(message["role"] == "user" for message in body["messages"])
    return f"<think>Thought {turn}.</think>Answer {turn}."


def assistant(turn: int) -> dict:
    thought = f"Thought {turn}."
    return {"role": "assistant", "content": f"Answer {turn}.", "reasoning_content": thought, "reasoning": thought}


def test_a_chain_of_three_sends_the_whole_history_in_order(client, fake):
    fake.answer = numbered_answers
    first = client.responses.create(model="qwen3", input="One", instructions="Be brief.")
    with client.responses.stream(model="qwen3", input="Two", previous_response_id=first.id) as stream:
        second = stream.get_final_response()
    third = client.responses.create(
        model="qwen3",
        input=[{"role": "user", "content": "Three"}],
        previous_response_id=second.id,
        instructions="Be kind.",
    )
    assert [first.output_text, second.output_text, third.output_text] == ["Answer 1.", "Answer 2.", "Answer 3."]
    assert second.previous_response_id == first.id and second.store is True
    assert fake.requests[1][1]["messages"] == [
        {"role": "user", "content": "One"},
        assistant(1),
        {"role": "user", "content": "Two"},
    ]  # the first request's instructions are not carried over
    assert fake.last_body["messages"] == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "One"},
        assistant(1),
        {"role": "user", "content": "Two"},
        assistant(2),
        {"role": "user", "content": "Three"},
    ]
    assert client.responses.retrieve(second.id).output[0].to_dict() == second.output[0].to_dict()


def test_input_items_come_a_page_at_a_time(client, fake):
    words = ["a", "b", "c", "d", "e"]
    created = client.responses.create(model="qwen3", input=[{"role": "user", "content": word} for word in words])
    newest_first = client.responses.input_items.list(created.id, limit=2)
    assert [item.content[0].text for item in newest_first.data] == ["e", "d"] and newest_first.has_more
    assert newest_first.first_id == newest_first.data[0].id and newest_first.last_id == newest_first.data[1].id
    rest = client.responses.input_items.list(created.id, order="asc", after=newest_first.data[1].id)
    assert [item.content[0].text for item in rest.data] == ["e"] and not rest.has_more
    every = [item.content[0].text for item in client.responses.input_items.list(created.id, order="asc")]
    assert every == words  # the SDK's auto-pagination
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.input_items.list(created.id, limit=1000)
    assert refused.value.body["param"] == "limit"


def test_store_false_keeps_nothing(client, fake):
    created = client.responses.create(model="qwen3", input="Hi", store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="qwen3", input="Again", previous_response_id=created.id)
    assert unknown.value.body["param"] == "previous_response_id"
    assert len(fake.requests) == 1


def test_a_conversation_collects_its_responses_items(client, fake):
    fake.answer = numbered_answers
    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "One"}], metadata={"topic": "numbers"}
    )
    assert conversation.id.startswith("conv_") and conversation.metadata == {"topic": "numbers"}
    first = client.responses.create(model="qwen3", input="Two", conversation=conversation.id)
    assert first.conversation.id == conversation.id and first.output_text == "Answer 2."
    client.conversations.items.create(conversation.id, items=[{"type": "message", "role": "user", "content": "Three"}])
    client.responses.create(model="qwen3", input="Four", conversation={"id": conversation.id}, store=False)
    assert (
        fake.last_body["messages"]
        == [
            {"role": "user", "content": "One"},
            {"role": "user", "content": "Two"},
            assistant(2),
            {"role": "user", "content": "Three"},
            {"role": "user", "content": "Four"},
            assistant(4),
        ][:-1]
    )
    items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [item.type for item in items] == [
        "message",
        "message",
        "reasoning",
        "message",
        "message",
        "message",
        "reasoning",
        "message",
    ]
    one = items[0]
    assert client.conversations.items.retrieve(one.id, conversation_id=conversation.id).to_dict() == one.to_dict()
    client.conversations.items.delete(one.id, conversation_id=conversation.id)
    assert [item.id for item in client.conversations.items.list(conversation.id, order="asc")] == [
        item.id for item in items[1:]
    ]
    updated = client.conversations.update(conversation.id, metadata={"topic": "counting"})
    assert client.conversations.retrieve(conversation.id).metadata == updated.metadata == {"topic": "counting"}
    deleted = client.conversations.delete(conversation.id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)
    with pytest.raises(openai.NotFoundError) as gone:
        client.responses.create(model="qwen3", input="Five", conversation=conversation.id)
    assert gone.value.body["param"] == "conversation"


def test_another_keys_objects_are_not_found(gateway, client, fake):
    created = client.responses.create(model="qwen3", input="Mine")
    conversation = client.conversations.create()
    other = sdk(gateway, KEYS[1])
    with pytest.raises(openai.NotFoundError) as hidden:
        other.responses.retrieve(created.id)
    assert hidden.value.body["message"] == f"Response with id '{created.id}' not found"
    for attempt in (
        lambda: other.responses.input_items.list(created.id),
        lambda: other.responses.delete(created.id),
        lambda: other.responses.create(model="qwen3", input="Yours?", previous_response_id=created.id),
        lambda: other.conversations.retrieve(conversation.id),
        lambda: other.conversations.items.list(conversation.id),
        lambda: other.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}]),
        lambda: other.conversations.delete(conversation.id),
        lambda: other.responses.create(model="qwen3", input="Yours?", conversation=conversation.id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert client.responses.retrieve(created.id).id == created.id  # still there for its own key
    assert client.conversations.retrieve(conversation.id).id == conversation.id


def test_background_without_store_and_cancel_of_a_foreground_response_are_refused(gateway, client, fake):
    with pytest.raises(openai.BadRequestError) as background:  # background runs: test_background_responses.py
        client.responses.create(model="qwen3", input="Hi", background=True, store=False)
    assert background.value.body["param"] == "background"
    created = client.responses.create(model="qwen3", input="Hi")
    with pytest.raises(openai.BadRequestError) as cancel:
        client.responses.cancel(created.id)
    assert "background" in cancel.value.body["message"]
    assert len(fake.requests) == 1


def test_a_stream_the_backend_cuts_is_stored_failed(client, fake):
    fake.script("<think>Hmm.</think>Partial answ", chunk_size=4)
    fake.cut = True
    with client.responses.stream(model="qwen3", input="Hi") as stream:
        events = list(stream)
    final = events[-1].response
    assert events[-1].type == "response.failed"
    stored = client.responses.retrieve(final.id)
    assert stored.status == "failed" and stored.to_dict() == final.to_dict()


def test_with_no_store_the_api_is_stateless(serve, fake_backend_server, fake):
    _, backend_url = fake_backend_server
    config = {"store": {"backend": "none"}, "models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}]}
    client = sdk(serve(create_app(Config.model_validate(config))))
    answered = client.responses.create(model="plain", input="Hi")
    assert answered.store is False and answered.output_text == "Hello!"
    for field in ({"store": True}, {"previous_response_id": answered.id}, {"conversation": "conv_1"}):
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="plain", input="Hi", **field)
        assert refused.value.body["param"] == next(iter(field))
        assert "store.backend is none" in refused.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(answered.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.create()
    assert len(fake.requests) == 1


def refusal(gateway: str, method: str, path: str, body: dict | None = None) -> dict:
    """The 400 error body a raw request (as a client's bug sends it) gets."""
    reply = httpx.request(method, f"{gateway}{path}", json=body, headers={"Authorization": f"Bearer {KEYS[0]}"})
    assert reply.status_code == 400, reply.text
    return reply.json()["error"]


@pytest.mark.parametrize("limit", ["²", "١", "0", "101", "-1", "1.5", ""])
def test_a_page_limit_not_written_in_ascii_digits_from_1_to_100_is_a_400(gateway, client, fake, limit):
    created = client.responses.create(model="qwen3", input="Hi")
    error = refusal(gateway, "GET", f"/v1/responses/{created.id}/input_items?limit={limit}")
    assert error == {
        "message": f"limit must be an integer from 1 to 100, got {limit!r}",
        "type": "invalid_request_error",
        "param": "limit",
        "code": None,
    }


@pytest.mark.parametrize(
    ("key", "value", "kind"), [("type", ["message"], "list"), ("id", {"a": 1}, "dict"), ("id", 7, "int")]
)
def test_an_item_whose_type_or_id_is_not_a_string_is_a_400(gateway, client, fake, key, value, kind):
    item = {"type": "message", "role": "user", "content": "Hi", key: value}
    conversation = client.conversations.create()
    for path, body, field in (
        ("/v1/responses", {"model": "qwen3", "input": [item]}, "input"),
        ("/v1/responses", {"model": "qwen3", "input": [item], "conversation": conversation.id}, "input"),
        ("/v1/conversations", {"items": [item]}, "items"),
        (f"/v1/conversations/{conversation.id}/items", {"items": [item]}, "items"),
    ):
        error = refusal(gateway, "POST", path, body)
        assert error["param"] == f"{field}[0].{key}"
        assert error["message"] == f"{field}[0].{key} must be a string, got {kind}"
    assert fake.requests == [] and list(client.conversations.items.list(conversation.id)) == []


@pytest.mark.parametrize("item_id", ["a/b", "", "a b", "a?b", "a#b", "tab\there", "bell\x07", "..", "x" * 257])
def test_an_item_id_no_route_could_address_is_a_400(gateway, client, fake, item_id):
    """An item id that cannot be one path segment of its item route as it
    is (which would be kept, then never read or deleted one at a time) is
    refused where it is given."""
    good = {"type": "message", "role": "user", "content": "Hi"}
    item = {**good, "id": item_id}
    conversation = client.conversations.create()
    for path, body, field in (
        ("/v1/responses", {"model": "qwen3", "input": [good, item]}, "input"),
        ("/v1/responses", {"model": "qwen3", "input": [good, item], "conversation": conversation.id}, "input"),
        ("/v1/conversations", {"items": [good, item]}, "items"),
        (f"/v1/conversations/{conversation.id}/items", {"items": [good, item]}, "items"),
    ):
        error = refusal(gateway, "POST", path, body)
        assert error["param"] == f"{field}[1].id"
        assert error["message"].startswith(f"{field}[1].id {item_id[:40]!r} cannot be an item id")
    assert fake.requests == [] and list(client.conversations.items.list(conversation.id)) == []


def test_the_longest_item_id_is_read_and_deleted_one_at_a_time(client, fake):
    longest = "msg_" + "~-._:@!$&'()*+,;=" + "x" * 235
    assert len(longest) == 256
    conversation = client.conversations.create(items=[{"id": longest, "role": "user", "content": "Hi"}])
    assert client.conversations.items.retrieve(longest, conversation_id=conversation.id).id == longest
    client.conversations.items.delete(longest, conversation_id=conversation.id)
    assert list(client.conversations.items.list(conversation.id)) == []


def test_an_item_id_of_null_is_taken_as_none_given(client, fake):
    item = {"type": "message", "role": "user", "content": "Hi", "id": None}
    conversation = client.conversations.create(items=[item])
    client.responses.create(model="qwen3", input=[item], conversation=conversation.id)
    ids = [listed.id for listed in client.conversations.items.list(conversation.id)]
    assert len(ids) == 3 and all(isinstance(made, str) and made.startswith(("msg_", "rs_")) for made in ids)


def test_an_input_item_id_repeated_in_the_request_or_the_conversation_is_a_400(gateway, client, fake):
    def message(item_id: str) -> dict:
        return {"id": item_id, "type": "message", "role": "user", "content": item_id}

    conversation = client.conversations.create(items=[message("msg_kept")])
    for body, param in (
        ({"input": [message("msg_new"), message("msg_kept")], "conversation": conversation.id}, "input[1].id"),
        ({"input": [message("msg_twice"), message("msg_twice")]}, "input[1].id"),
        (
            {"input": [message("msg_twice"), message("msg_twice")], "store": False, "conversation": conversation.id},
            "input[1].id",
        ),
    ):
        error = refusal(gateway, "POST", "/v1/responses", {"model": "qwen3", **body})
        assert error["param"] == param and error["message"].startswith("Duplicate item found with id")
    assert fake.requests == []
    assert [item.id for item in client.conversations.items.list(conversation.id)] == ["msg_kept"]
    client.responses.create(model="qwen3", input=[message("msg_new")], conversation=conversation.id)
    ids = [item.id for item in client.conversations.items.list(conversation.id, order="asc")]
    assert ids[:2] == ["msg_kept", "msg_new"] and len(ids) == len(set(ids))


def test_a_conversation_refuses_items_no_response_could_continue(gateway, client, fake):
    conversation = client.conversations.create(items=[{"type": "message", "role": "user", "content": "One"}])
    file_part = {"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}
    for items, param in (
        ([file_part], "items[0].content[0]"),
        ([{"role": "user", "content": "Two"}, {"type": "item_reference", "id": "msg_1"}], "items[1]"),
        ([{"type": "message", "role": "tool", "content": "x"}], "items[0]"),
        ([{"type": "message", "role": "user", "content": 5}], "items[0].content"),
        ([{"type": "function_call_output", "output": "done"}], "items[0].call_id"),
    ):
        assert refusal(gateway, "POST", "/v1/conversations", {"items": items})["param"] == param
        assert (
            refusal(gateway, "POST", f"/v1/conversations/{conversation.id}/items", {"items": items})["param"] == param
        )
    fake.answer = numbered_answers
    answered = client.responses.create(model="qwen3", input="Two", conversation=conversation.id)
    assert answered.output_text == "Answer 2."  # nothing refused was kept


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({f"k{index}": "v" for index in range(17)}, "metadata may hold at most 16 pairs, got 17"),
        ({"k" * 65: "v"}, "metadata keys may be at most 64 characters, got 65"),
        ({"k": "v" * 513}, "metadata['k'] may be at most 512 characters, got 513"),
        ({"k": 1}, "metadata must be an object of string values"),
    ],
)
def test_metadata_beyond_openais_bounds_is_a_400(gateway, client, fake, metadata, message):
    conversation = client.conversations.create()
    for method, path, body in (
        ("POST", "/v1/conversations", {"metadata": metadata}),
        ("POST", f"/v1/conversations/{conversation.id}", {"metadata": metadata}),
        ("POST", "/v1/responses", {"model": "qwen3", "input": "Hi", "metadata": metadata}),
    ):
        assert refusal(gateway, method, path, body) == {
            "message": message,
            "type": "invalid_request_error",
            "param": "metadata",
            "code": None,
        }
    assert fake.requests == []
    widest = {f"{index:02d}" + "k" * 62: "v" * 512 for index in range(16)}
    assert client.conversations.create(metadata=widest).metadata == widest
    assert client.responses.create(model="qwen3", input="Hi", metadata=widest).metadata == widest
