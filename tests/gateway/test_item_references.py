"""`item_reference` input items (issue 44): one names an item of the
chain (`previous_response_id`) or the conversation the request continues,
and the model reads that item; any other id, another key's included, is a
404 naming `input[i].id`, and a gateway that keeps nothing says so in a
400. Through the openai SDK against the real gateway on each store (a
SQLite file, `redis-server`, PostgreSQL)."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway import test_store_processes as processes
from tests.gateway.test_store_processes import EACH_STORE, config, numbered_answers
from tests.sdk_clients import openai_client

redis_server, postgres_server, store_url = processes.redis_server, processes.postgres_server, processes.store_url
KEYS = ["key-mine", "key-other"]


def clients(serve, fake_backend_server, store: dict) -> tuple[openai.OpenAI, openai.OpenAI]:
    settings = {**config(fake_backend_server, store), "server": {"api_keys": KEYS}}
    gateway = serve(create_app(Config.model_validate(settings)))
    mine, other = (openai_client(gateway, api_key=key) for key in KEYS)
    return mine, other


def reference(item_id: str) -> dict:
    return {"type": "item_reference", "id": item_id}


@EACH_STORE
def test_a_reference_to_an_item_of_the_chain_is_that_item(store_url, serve, fake_backend_server, fake, backend):
    fake.answer = numbered_answers
    mine, _ = clients(serve, fake_backend_server, {"backend": backend, "url": store_url})
    first = mine.responses.create(model="qwen3", input="Say 1")
    [asked] = mine.responses.input_items.list(first.id).data
    again = {"role": "user", "content": "Again"}
    second = mine.responses.create(model="qwen3", previous_response_id=first.id, input=[reference(asked.id), again])
    assert fake.last_body["messages"][-2:] == [{"role": "user", "content": "Say 1"}, again]
    listed = mine.responses.input_items.list(second.id, order="asc").data
    assert [item.content[0].text for item in listed] == ["Say 1", "Again"]  # the copy, stored under an id of its own
    assert listed[0].id != asked.id
    third = mine.responses.create(model="qwen3", previous_response_id=second.id, input="Go on")
    assert fake.last_body["messages"][-3]["content"] == "Again"
    assert third.status == "completed"  # a chain that holds the copy goes on


@EACH_STORE
def test_a_reference_to_an_item_of_the_conversation_is_that_item(store_url, serve, fake_backend_server, fake, backend):
    fake.answer = numbered_answers
    mine, _ = clients(serve, fake_backend_server, {"backend": backend, "url": store_url})
    conversation = mine.conversations.create(items=[{"type": "message", "role": "user", "content": "Say 1"}])
    [held] = mine.conversations.items.list(conversation.id).data
    mine.responses.create(model="qwen3", conversation=conversation.id, input=[reference(held.id)])
    assert fake.last_body["messages"] == [{"role": "user", "content": "Say 1"}, {"role": "user", "content": "Say 1"}]
    assert len(mine.conversations.items.list(conversation.id).data) == 4  # the copy added, under its own id


@EACH_STORE
def test_a_reference_to_another_keys_item_or_an_unknown_one_is_a_404_naming_it(
    store_url, serve, fake_backend_server, fake, backend
):
    fake.answer = numbered_answers
    mine, other = clients(serve, fake_backend_server, {"backend": backend, "url": store_url})
    theirs = other.responses.create(model="qwen3", input="Secret")
    own = mine.responses.create(model="qwen3", input="Say 1")
    asked = len(fake.requests)
    for item_id in (theirs.output[1].id, "msg_unknown"):
        for continued in ({"previous_response_id": own.id}, {}):
            with pytest.raises(openai.NotFoundError) as raised:
                mine.responses.create(model="qwen3", input=[reference(item_id)], **continued)
            assert raised.value.body["param"] == "input[0].id"
            assert f"Item with id '{item_id}' not found" in raised.value.body["message"]
    assert len(fake.requests) == asked


def test_with_no_store_a_reference_is_a_400_saying_so(serve, fake_backend_server, fake):
    mine, _ = clients(serve, fake_backend_server, {"backend": "none"})
    with pytest.raises(openai.BadRequestError) as raised:
        mine.responses.create(model="qwen3", input=[{"role": "user", "content": "Hi"}, reference("msg_1")])
    assert raised.value.body["param"] == "input[1].id"
    assert "store.backend is none" in raised.value.body["message"]
    assert fake.requests == []
