"""What a request that continues stored items may load (docs/state.md):
no more than it may send itself, `max_input_items` items with its input
and `max_body_bytes` of JSON, whether it continues a chain
(`previous_response_id`) or a conversation; past that, a 400 naming the
field, before anything is sent upstream. Through the official openai SDK,
against the real gateway on loopback with a real SQLite file."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

MAX_ITEMS = 6
MAX_BYTES = 4000


@pytest.fixture(scope="module")
def client(serve, fake_backend_server, tmp_path_factory) -> openai.OpenAI:
    _, backend_url = fake_backend_server
    config = {
        "server": {"max_input_items": MAX_ITEMS, "max_body_bytes": MAX_BYTES},
        "store": {"url": str(tmp_path_factory.mktemp("store") / "responses.db")},
        "models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}],
    }
    url = serve(create_app(Config.model_validate(config)))
    return openai_client(url)


def words(count: int) -> list[dict]:
    return [{"role": "user", "content": f"word {index}"} for index in range(count)]


def test_a_chain_continues_up_to_max_input_items_with_its_input(client, fake):
    fake.script("Answer.")
    first = client.responses.create(model="plain", input=words(3))  # 3 items, and 1 of output
    second = client.responses.create(model="plain", input=words(2), previous_response_id=first.id)  # 4 + 2
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="One more", previous_response_id=second.id)  # 7 + 1
    assert refused.value.body == {
        "message": (
            f"previous_response_id continues 7 items, and input adds 1: more than the {MAX_ITEMS} a request may "
            "hold (max_input_items); start a new chain or conversation"
        ),
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "array_above_max_length",
    }
    assert len(fake.requests) == 2


def test_a_conversation_continues_up_to_max_input_items_with_its_input(client, fake):
    fake.script("Answer.")
    conversation = client.conversations.create(items=words(MAX_ITEMS - 1))
    client.responses.create(model="plain", input="Last", conversation=conversation.id)  # 5 + 1
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="One more", conversation=conversation.id)  # 7 + 1
    assert refused.value.body["param"] == "conversation"
    assert refused.value.body["code"] == "array_above_max_length"
    assert len(fake.requests) == 1


def test_a_chain_continues_up_to_max_body_bytes_of_items(client, fake):
    fake.script("Answer.")
    first = client.responses.create(model="plain", input="x" * 2000)
    second = client.responses.create(model="plain", input="y" * 2000, previous_response_id=first.id)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="z", previous_response_id=second.id)
    body = refused.value.body
    assert body["param"] == "previous_response_id" and body["type"] == "invalid_request_error"
    assert f"bytes of items: more than the {MAX_BYTES} a request may send (max_body_bytes)" in body["message"]
    assert len(fake.requests) == 2
