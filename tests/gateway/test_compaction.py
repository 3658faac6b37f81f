"""Compaction as Codex asks for it (issue 44): a `compaction_trigger` as
the last input item, or `POST /v1/responses/compact`, answers one
`compaction` item holding the backend's summary, sealed; a later request
that sends the item back gets the summary expanded for the model; a
stored session outlives a changed `seal_key`, and `previous_seal_keys`
keep the items a client holds. Through the openai SDK against the real
gateway in front of the fake backend."""

from __future__ import annotations

import openai
import pytest

from gateway.api.compaction import SUMMARY_PROMPT
from gateway.api.compaction_seal import EXPANDED_HEADING, Seal
from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.errors import ApiError
from tests.sdk_clients import openai_client

SUMMARY = "The user wants a CLI that counts words; cli.py is written, tests are next."
HISTORY = [
    {"role": "user", "content": "Write a word counter."},
    {"role": "assistant", "content": "Done: cli.py."},
    {"role": "user", "content": "Now the tests."},
]
TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
TRIGGER = {"type": "compaction_trigger"}


def compacted(client: openai.OpenAI, fake, stream: bool) -> dict:
    """The compaction item of a triggered turn, streamed or not."""
    fake.script(SUMMARY)
    if not stream:
        response = client.responses.create(model="qwen3", input=[*HISTORY, TRIGGER], tools=TOOLS, store=False)
        assert response.status == "completed"
        [item] = response.output
        return item.to_dict()
    events = list(client.responses.create(model="qwen3", input=[*HISTORY, TRIGGER], tools=TOOLS, stream=True))
    assert [event.type for event in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(5))
    [item] = events[-1].response.output
    assert events[3].item.to_dict() == item.to_dict()
    return item.to_dict()


@pytest.mark.parametrize("stream", [False, True])
def test_a_compaction_trigger_answers_one_sealed_summary_of_the_conversation(client, fake, stream):
    item = compacted(client, fake, stream)
    assert item["type"] == "compaction" and item["id"].startswith("cmp_")
    assert item["encrypted_content"].startswith("pgc1.")
    asked = fake.last_body
    assert asked["messages"] == [*HISTORY, {"role": "user", "content": SUMMARY_PROMPT}]
    assert "tools" not in asked and not asked.get("stream")


def test_a_compaction_item_sent_back_is_the_summary_the_model_reads(client, fake):
    item = compacted(client, fake, stream=False)
    fake.script("Writing the tests.")
    follow_up = {"role": "user", "content": "Go on."}
    client.responses.create(model="qwen3", input=[item, follow_up], store=False)
    assert fake.last_body["messages"] == [
        {"role": "user", "content": f"{EXPANDED_HEADING}\n\n{SUMMARY}"},
        {"role": "user", "content": "Go on."},
    ]


def test_a_compaction_item_the_gateway_did_not_seal_is_a_400_naming_it(client, fake):
    item = compacted(client, fake, stream=False)
    forged = {**item, "encrypted_content": item["encrypted_content"][:-4] + "0000"}
    for bad in (forged, {**item, "encrypted_content": "opaque-from-openai"}):
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="qwen3", input=[bad, {"role": "user", "content": "Go on."}], store=False)
        assert raised.value.body["param"] == "input[0].encrypted_content"
        assert "was not sealed by this gateway" in raised.value.body["message"]


def test_a_compaction_trigger_that_is_not_last_is_a_400(client, fake):
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="qwen3", input=[TRIGGER, *HISTORY], store=False)
    assert raised.value.body["param"] == "input[0]"
    assert fake.requests == []


def test_the_older_compact_route_answers_a_compacted_response(client, fake):
    fake.script(SUMMARY)
    compacted_response = client.responses.compact(model="qwen3", input=HISTORY)
    assert compacted_response.object == "response.compaction"
    [item] = compacted_response.output
    assert item.type == "compaction" and item.encrypted_content.startswith("pgc1.")
    assert compacted_response.usage.total_tokens > 0
    assert fake.last_body["messages"][-1] == {"role": "user", "content": SUMMARY_PROMPT}


def test_replicas_sharing_a_seal_key_expand_each_others_items_and_no_other_key_does():
    sealed = Seal("a shared key of 32 characters!!").seal("summary")
    assert Seal("a shared key of 32 characters!!").unseal(sealed, "input[0]") == "summary"
    with pytest.raises(ApiError):
        Seal("another key of 32 characters!!!").unseal(sealed, "input[0]")


def test_previous_seal_keys_unseal_what_was_sealed_before_a_rotation_and_seal_nothing():
    old, new = "the old key of 32 characters!!!", "the new key of 32 characters!!!"
    before = Seal(old).seal("summary")
    rotated = Seal(new, [old])
    assert rotated.unseal(before, "input[0]") == "summary"
    assert Seal(new).unseal(rotated.seal("after"), "input[0]") == "after"  # sealed with the new key alone
    with pytest.raises(ApiError):
        Seal(new).unseal(before, "input[0]")


def keyed_gateway(serve, fake_backend_server, store_file: str, server: dict) -> openai.OpenAI:
    _, backend_url = fake_backend_server
    config = {
        "server": server,
        "store": {"url": store_file},
        "models": [{"name": "plain", "backend": {"url": f"{backend_url}/v1"}}],
    }
    return openai_client(serve(create_app(Config.model_validate(config))))


def test_a_stored_session_outlives_a_changed_seal_key_and_a_held_item_needs_the_old_key_listed(
    serve, fake_backend_server, fake, tmp_path
):
    old, new = "the old key of 32 characters!!!", "the new key of 32 characters!!!"
    store_file = str(tmp_path / "store.db")
    before = keyed_gateway(serve, fake_backend_server, store_file, {"seal_key": old})
    fake.script(SUMMARY)
    compacted = before.responses.create(model="plain", input=[*HISTORY, TRIGGER])
    after = keyed_gateway(serve, fake_backend_server, store_file, {"seal_key": new})
    fake.script("Writing the tests.")
    after.responses.create(model="plain", input="Go on.", previous_response_id=compacted.id)
    assert fake.last_body["messages"] == [  # from the stored summary on: it stands for the items before it
        {"role": "user", "content": f"{EXPANDED_HEADING}\n\n{SUMMARY}"},
        {"role": "user", "content": "Go on."},
    ]
    held = [compacted.output[0].to_dict(), {"role": "user", "content": "Go on."}]
    with pytest.raises(openai.BadRequestError) as refused:
        after.responses.create(model="plain", input=held, store=False)
    assert "server.previous_seal_keys" in refused.value.body["message"]
    rotated = keyed_gateway(serve, fake_backend_server, store_file, {"seal_key": new, "previous_seal_keys": [old]})
    rotated.responses.create(model="plain", input=held, store=False)
    assert fake.last_body["messages"][0] == {"role": "user", "content": f"{EXPANDED_HEADING}\n\n{SUMMARY}"}
