"""What a Responses request's `include` adds (issue 44): the reasoning
item's text sealed as its `encrypted_content`, which a `store: false`
client (Codex) sends back to have the reasoning replayed, and the output
text's logprobs, asked of the backend. Through the openai SDK against the
real gateway in front of the fake backend."""

from __future__ import annotations

import openai
import pytest

from gateway.api.compaction_seal import Seal
from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import token_logprobs
from tests.gateway.test_store_processes import config
from tests.sdk_clients import openai_client

REPLY = "<think>The user greets me.</think>Hello there!"
SEALED = ["reasoning.encrypted_content"]
LOGPROBS = ["message.output_text.logprobs"]
NEXT = {"role": "user", "content": "And now?"}


def output(client: openai.OpenAI, fake, stream: bool, include: list[str], **body) -> list[dict]:
    """The response's output items, streamed or not (a stream's done events checked against its final output)."""
    fake.script(REPLY)
    if not stream:
        response = client.responses.create(model="qwen3", input="Hi", store=False, include=include, **body)
        return [item.to_dict() for item in response.output]
    events = list(client.responses.create(model="qwen3", input="Hi", store=False, include=include, stream=True, **body))
    final = [item.to_dict() for item in events[-1].response.output]
    assert [event.item.to_dict() for event in events if event.type == "response.output_item.done"] == final
    return final


@pytest.mark.parametrize("stream", [False, True])
def test_included_encrypted_content_is_the_reasoning_sealed_and_replays_it(client, fake, stream):
    thought, message = output(client, fake, stream, SEALED)
    assert thought["type"] == "reasoning" and thought["encrypted_content"].startswith("pgc1.")
    assert message["content"][0]["text"] == "Hello there!"
    fake.script("Fine.")
    replayed = {**thought, "summary": []}  # what the client kept is only the sealed text
    client.responses.create(model="qwen3", input=[replayed, message, NEXT], store=False)
    [assistant, user] = fake.last_body["messages"]
    assert assistant["content"] == "Hello there!" and assistant["reasoning_content"] == "The user greets me."
    assert user == NEXT


def test_without_include_the_reasoning_item_has_no_encrypted_content(client, fake):
    thought, _ = output(client, fake, False, [])
    assert thought.get("encrypted_content") is None


def test_a_forged_reasoning_encrypted_content_is_a_400_naming_it(client, fake):
    thought, _ = output(client, fake, False, SEALED)
    for forged in (thought["encrypted_content"][:-4] + "0000", "pgc1.e30.0000", 5):
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="qwen3", input=[{**thought, "encrypted_content": forged}, NEXT], store=False)
        assert raised.value.body["param"] == "input[0].encrypted_content"
        assert "was not sealed by this gateway" in raised.value.body["message"]


def test_reasoning_sealed_by_another_server_is_replayed_from_its_text(client, fake):
    fake.script("Fine.")
    openais = {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Earlier."}],
        "encrypted_content": "gAAAAB",
    }
    client.responses.create(model="qwen3", input=[openais, NEXT], store=False)
    assert fake.last_body["messages"][0]["reasoning_content"] == "Earlier."


def test_a_stored_chain_with_sealed_reasoning_outlives_a_new_seal_key(serve, fake_backend_server, fake, tmp_path):
    app = create_app(Config.model_validate(config(fake_backend_server, {"url": str(tmp_path / "store.db")})))
    client = openai_client(serve(app))
    fake.script(REPLY)
    first = client.responses.create(model="qwen3", input="Hi", include=SEALED)
    app.state.seal = Seal(None)  # as after a restart without server.seal_key: a new random key
    fake.script("Fine.")
    client.responses.create(model="qwen3", input="And now?", previous_response_id=first.id)
    assert fake.last_body["messages"][1]["reasoning_content"] == "The user greets me."


def test_a_compaction_seal_is_not_taken_as_reasoning(client, fake):
    fake.script("A summary.")
    [compaction] = client.responses.create(
        model="qwen3", input=[NEXT, {"type": "compaction_trigger"}], store=False
    ).output
    item = {"type": "reasoning", "summary": [], "encrypted_content": compaction.to_dict()["encrypted_content"]}
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="qwen3", input=[item, NEXT], store=False)
    assert raised.value.body["param"] == "input[0].encrypted_content"


def test_included_logprobs_are_asked_of_the_backend_and_returned_with_the_text(client, fake):
    _, message = output(client, fake, False, LOGPROBS, top_logprobs=2)
    assert fake.last_body["logprobs"] is True and fake.last_body["top_logprobs"] == 2
    [part] = message["content"]
    assert part["logprobs"] == token_logprobs(REPLY)["content"]  # every token of the turn, its reasoning's first


def test_streamed_logprobs_come_with_each_text_delta_and_add_up_to_the_parts(client, fake):
    fake.script(REPLY)
    events = list(client.responses.create(model="qwen3", input="Hi", store=False, include=LOGPROBS, stream=True))
    deltas = [event for event in events if event.type == "response.output_text.delta"]
    assert "".join(delta.delta for delta in deltas) == "Hello there!"
    carried = [token.to_dict() for delta in deltas for token in delta.logprobs]
    assert carried == token_logprobs(REPLY)["content"]
    [done] = [event for event in events if event.type == "response.output_text.done"]
    assert [token.to_dict() for token in done.logprobs] == carried
    part = events[-1].response.output[1].content[0].to_dict()
    assert part["logprobs"] == carried


def test_without_include_no_logprobs_are_asked(client, fake):
    _, message = output(client, fake, False, [])
    assert "logprobs" not in fake.last_body
    assert message["content"][0].get("logprobs") is None
