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
        "models": [
            {"name": "plain", "backend": {"url": f"{backend_url}/v1"}},
            {"name": "thinking", "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3"},
        ],
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


def test_a_response_never_puts_its_conversation_past_max_input_items(client, fake):
    """A response adds its input and output to its conversation only while
    the conversation then holds at most `max_input_items`, the most a later
    turn may continue; past that it is a 400 naming `conversation` and
    nothing is stored (before, the response was added, and every later
    turn on the conversation was a 400)."""
    fake.script("<think>Hmm.</think>Answer.")  # "thinking" answers a reasoning item and a message, "plain" a message
    conversation = client.conversations.create(items=words(MAX_ITEMS - 2))
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="thinking", input="Two more", conversation=conversation.id)  # 4 + 1 + 2
    assert refused.value.body == {
        "message": (
            f"the conversation holds 4 items; with this response's 1 input items and 2 output items it would pass "
            f"the {MAX_ITEMS} it may hold (max_input_items), and no later response could continue it, so they were "
            "not added: delete items from the conversation, or start a new one"
        ),
        "type": "invalid_request_error",
        "param": "conversation",
        "code": "array_above_max_length",
    }
    streamed = list(
        client.responses.create(model="thinking", input="Two more", conversation=conversation.id, stream=True)
    )
    assert streamed[-1].type == "response.failed"
    assert streamed[-1].response.error.code == "array_above_max_length"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(streamed[-1].response.id)  # not stored either
    assert len(client.conversations.items.list(conversation.id).data) == MAX_ITEMS - 2
    answered = client.responses.create(model="plain", input="Last", conversation=conversation.id)  # 4 + 1 + 1
    assert answered.output_text == "<think>Hmm.</think>Answer."
    assert len(client.conversations.items.list(conversation.id).data) == MAX_ITEMS
    assert client.conversations.items.list(conversation.id).data[0].content[0].text == "<think>Hmm.</think>Answer."


def test_a_response_is_refused_before_it_is_sent_when_its_conversation_has_no_room(client, fake):
    fake.script("Answer.")
    conversation = client.conversations.create(items=words(MAX_ITEMS - 1))
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="Last", conversation=conversation.id)  # 5 + 1, and its output
    assert refused.value.body["param"] == "conversation"
    assert refused.value.body["code"] == "array_above_max_length"
    assert refused.value.body["message"].startswith(
        "the conversation holds 5 items; with this response's 1 input items and any output it would pass"
    )
    assert refused.value.body["message"].endswith(
        "so nothing was sent: delete items from the conversation, or start a new one"
    )
    with pytest.raises(openai.BadRequestError) as more:
        client.responses.create(model="plain", input=words(2), conversation=conversation.id)  # 5 + 2
    assert more.value.body["param"] == "conversation"
    assert len(fake.requests) == 0


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


def test_a_chain_of_more_responses_than_a_request_may_hold_items_ends(client, fake):
    """A chain is read back a response at a time up to one more than
    `max_input_items`; past that it is a 400, even when its responses hold
    no items (an empty input, answered with nothing), and nothing is sent
    upstream: a chain's length bounds the reading of it."""
    fake.script("")
    previous = client.responses.create(model="plain", input="Start")  # 1 item
    for _ in range(MAX_ITEMS + 1):
        previous = client.responses.create(model="plain", input=[], previous_response_id=previous.id)
    assert previous.output == []
    asked = len(fake.requests)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="plain", input="One more", previous_response_id=previous.id)
    assert refused.value.body == {
        "message": (
            f"previous_response_id continues a chain of more than {MAX_ITEMS + 1} responses: more than a request "
            f"may hold (max_input_items: {MAX_ITEMS}); start a new chain"
        ),
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "array_above_max_length",
    }
    assert len(fake.requests) == asked
