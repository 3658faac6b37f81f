"""Chains of stored responses by reference (docs/state.md): a stored
response keeps its own input and output and the id of the response it
continued, never a copy of the chain before it; a chain is read back along
those links. On each store (a real SQLite file, `redis-server`,
PostgreSQL): what a long chain costs the store, a response deleted in the
middle of a chain, a chain kept as long as it is in use, and records of
the earlier layout (each with a copy of its chain) continued."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3

import asyncpg
import httpx
import orjson
import pytest
import redis

from gateway.api.responses_request import responses_fields
from gateway.api.responses_shapes import ResponseObject, message_item
from gateway.api.responses_state import ResponseState, as_stored_items, input_items
from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.ids import UNGUESSABLE, new_id
from gateway.ops.store import StoredResponse, open_store, records
from gateway.ops.store_config import StoreConfig
from tests.gateway import test_store_processes as processes
from tests.gateway.test_store_processes import EACH_STORE, Clock, config, numbered_answers

# the stores' fixtures, as the store tests make them: a real redis-server and PostgreSQL, and each test's store
redis_server, postgres_server, store_url = processes.redis_server, processes.postgres_server, processes.store_url
DAY = 86400.0
TURNS = 100
TURN_BYTES = 20_000


async def _stored_bytes(backend: str, url: str) -> tuple[int, int]:
    """What the store's database holds: the bytes of its values (SQLite's
    and PostgreSQL's `value` columns, Redis's strings and hashes), and the
    room they take (the SQLite file's pages in use after a checkpoint of
    its journal; Redis's MEMORY USAGE of its keys; PostgreSQL's tables with
    their TOAST and indexes)."""
    if backend == "sqlite":
        with sqlite3.connect(url) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            values = db.execute(
                "SELECT (SELECT coalesce(sum(length(value)), 0) FROM records)"
                " + (SELECT coalesce(sum(length(value)), 0) FROM items)"
            ).fetchone()[0]
            pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
            return values, pages * db.execute("PRAGMA page_size").fetchone()[0]
    if backend == "redis":
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter("parsegate:*"))
        values = sum(client.strlen(key) for key in keys if client.type(key) == b"string")
        values += sum(len(value) for key in keys if client.type(key) == b"hash" for value in client.hvals(key))
        room = sum(client.memory_usage(key) or 0 for key in keys)
        client.close()
        return values, room
    connection = await asyncpg.connect(url)
    values = await connection.fetchval(
        "SELECT (SELECT coalesce(sum(octet_length(value)), 0) FROM parsegate_records)"
        " + (SELECT coalesce(sum(octet_length(value)), 0) FROM parsegate_items)"
    )
    room = await connection.fetchval(
        "SELECT pg_total_relation_size('parsegate_records') + pg_total_relation_size('parsegate_items')"
    )
    await connection.close()
    return values, room


async def _a_long_chain(backend: str, url: str) -> tuple[int, tuple[int, int], int]:
    """`TURNS` requests of `TURN_BYTES` of text, each continuing the one
    before, stored as the gateway stores them (`ResponseState.save`, what
    they continue read as `load_state` reads it): the bytes the client
    sent, what the store holds then (`_stored_bytes`), and the responses
    the last one's chain reads back."""
    store = open_store(StoreConfig.model_validate({"backend": backend, "url": url}))
    assert store is not None
    await store.purge_expired()  # the tables made
    before = await _stored_bytes(backend, url)
    sent, previous, chain = 0, None, None
    for _ in range(TURNS):
        raw = {"model": "qwen3", "input": secrets.token_urlsafe(TURN_BYTES)[:TURN_BYTES]}
        if previous is not None:
            raw["previous_response_id"] = previous
            chain = await store.chain("", previous, TURNS + 1)
            assert chain is not None
        sent += len(orjson.dumps(raw))
        asked = responses_fields(raw)
        continues = [stored.response["id"] for stored in chain.responses] if chain is not None else []
        state = ResponseState(store, "", keeps=True, input=as_stored_items(input_items(asked)), continues=continues)
        output = [message_item(new_id("msg_", UNGUESSABLE), "Noted.")]
        response = await state.save(ResponseObject(asked, raw, stored=True).finished(output, "stop", None))
        assert response["store"] is True
        previous = response["id"]
    after = await _stored_bytes(backend, url)
    assert previous is not None
    read = await store.chain("", previous, TURNS + 1)
    await store.close()
    assert read is not None
    return sent, (after[0] - before[0], after[1] - before[1]), len(read.responses)


@EACH_STORE
def test_a_long_chain_is_stored_once(store_url, backend):
    """100 turns of 20 KB chained by `previous_response_id` store at most
    1.2 times the bytes the client sent (every response kept a copy of the
    chain before it: 51 times, growing with the square of the chain's
    length), and the whole chain reads back."""
    sent, (values, room), read = asyncio.run(_a_long_chain(backend, store_url))
    assert read == TURNS
    assert values <= 1.2 * sent, f"{values} bytes stored for {sent} sent: {values / sent:.2f}x"  # measured: 1.04x
    # the room they take, with each engine's granularity (SQLite's pages, jemalloc's size classes, PostgreSQL's
    # TOAST chunks): measured 1.06x, 1.23x and 1.32x
    assert room <= 1.5 * sent, f"{room} bytes of room for {sent} sent: {room / sent:.2f}x"


def gateway(serve, fake_backend_server, backend: str, url: str) -> str:
    return serve(create_app(Config.model_validate(config(fake_backend_server, {"backend": backend, "url": url}))))


def ask(url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{url}/v1/responses", json=body, timeout=30)


def text_of(reply: httpx.Response) -> str:
    return reply.json()["output"][-1]["content"][0]["text"]


@EACH_STORE
def test_a_chain_through_a_deleted_response_is_a_404_naming_it(store_url, serve, fake_backend_server, fake, backend):
    """Deleting a response in the middle of a chain ends the chains through
    it: continuing a later response answers 404 naming the deleted one, and
    nothing is sent upstream (a later response kept a copy of it before,
    and a deleted response's items went on being sent). The later
    responses are still there, each with its own input items; the chain
    before the deleted one goes on."""
    fake.answer = numbered_answers
    url = gateway(serve, fake_backend_server, backend, store_url)
    ids: list[str] = []
    for turn in range(1, 5):
        previous = {"previous_response_id": ids[-1]} if ids else {}
        ids.append(ask(url, {"model": "qwen3", "input": f"Say {turn}", **previous}).json()["id"])
    assert httpx.delete(f"{url}/v1/responses/{ids[1]}").status_code == 200
    asked = len(fake.requests)
    refused = ask(url, {"model": "qwen3", "input": "Say 5", "previous_response_id": ids[3]})
    assert refused.status_code == 404
    assert refused.json()["error"] == {
        "message": f"Previous response with id '{ids[1]}' not found: '{ids[3]}' continues it, and it was "
        "deleted or has expired; start a new chain",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "not_found",
    }
    assert len(fake.requests) == asked
    later = httpx.get(f"{url}/v1/responses/{ids[3]}/input_items").json()
    assert [item["content"][0]["text"] for item in later["data"]] == ["Say 4"]  # its own input, as before
    assert httpx.get(f"{url}/v1/responses/{ids[2]}").json()["previous_response_id"] == ids[1]
    goes_on = ask(url, {"model": "qwen3", "input": "Say 2", "previous_response_id": ids[0]})
    assert text_of(goes_on) == "Answer 2."


async def _a_chain_in_use(backend: str, url: str, clock: Clock) -> list[bool]:
    """Responses (retention: 1 day) continuing one another at 0, 0.6 and
    1.2 days, read at 1.5 days (after a purge): which are still there, and
    whether the chain is whole."""
    store = open_store(StoreConfig.model_validate({"backend": backend, "url": url, "retention_days": 1}))
    assert store is not None
    continued: list[str] = []
    for name in CHAIN:
        response = {"id": name, "output": [], "previous_response_id": continued[-1] if continued else None}
        await store.save_response("", StoredResponse(response, []), continued)
        continued.append(name)
        clock.now += 0.6 * DAY
    clock.now -= 0.3 * DAY
    await store.purge_expired()
    found = [await store.response("", name) is not None for name in CHAIN]
    chain = await store.chain("", CHAIN[-1], 10)
    await store.close()
    return [*found, chain is not None and [stored.response["id"] for stored in chain.responses] == list(CHAIN)]


CHAIN = ("resp_one", "resp_two", "resp_three")


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_chain_in_use_is_kept_whole(store_url, monkeypatch):
    """A response keeps the chain it continues another retention: a chain
    whose first response is older than `retention_days` goes on while it
    is in use (each response carried a copy of its chain before, and the
    first response itself expired)."""
    clock = Clock()
    monkeypatch.setattr(records, "time", clock)
    backend = "sqlite" if not store_url.startswith("postgresql") else "postgres"
    assert asyncio.run(_a_chain_in_use(backend, store_url, clock)) == [True, True, True, True]


@pytest.mark.parametrize("store_url", ["redis"], indirect=True)
def test_a_chain_in_use_is_kept_whole_in_redis(store_url, monkeypatch):
    """Redis expires keys on its own clock: each response of the chain must
    expire a retention after the last response continuing it, which the
    store's clock put at 1.2 days from now."""
    clock = Clock()
    monkeypatch.setattr(records, "time", clock)
    asyncio.run(_a_chain_in_use("redis", store_url, clock))
    client = redis.Redis.from_url(store_url)
    assert [client.ttl(f"parsegate:record:response:{name}") > 2 * DAY for name in CHAIN] == [True] * 3
    client.close()


def said(role: str, text: str, item_id: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": role,
        "content": [{"type": part, "text": text}],
    }


def messages(*texts: str) -> list[dict]:
    """The chat messages of user and assistant turns, in turn, from `texts`."""
    return [{"role": ("user", "assistant")[index % 2], "content": text} for index, text in enumerate(texts)]


async def _write_old_record(backend: str, url: str) -> None:
    """A response as parsegate stored it before chains were kept by
    reference: its request's input, its output, and a copy of its whole
    chain's items (`history`), without a link."""
    store = open_store(StoreConfig.model_validate({"backend": backend, "url": url}))
    assert store is not None
    response = {
        "id": "resp_old",
        "object": "response",
        "status": "completed",
        "output": [said("assistant", "Answer 2.", "msg_a2")],
        "previous_response_id": "resp_older",
        "store": True,
    }
    history = [said("user", "Say 1", "msg_u1"), said("assistant", "Answer 1.", "msg_a1")]
    record = {"owner": "", "response": response, "input": [said("user", "Say 2", "msg_u2")], "history": history}
    await store._storage.put("response:resp_old", orjson.dumps(record), store._expiry())
    await store.close()


async def _record_value(backend: str, url: str, response_id: str) -> bytes | None:
    store = open_store(StoreConfig.model_validate({"backend": backend, "url": url}))
    assert store is not None
    value = await store._storage.get(f"response:{response_id}", 0.0, b"")
    await store.close()
    return value


@EACH_STORE
def test_a_record_of_the_earlier_layout_is_continued_by_reference(store_url, serve, fake_backend_server, fake, backend):
    """A store written by an earlier version (each response with a copy of
    its chain) keeps working: its responses are read and listed as they
    were, and continued with their whole chain; a response continuing one
    keeps only its own items, and its own chain goes on through it."""
    fake.answer = numbered_answers
    url = gateway(serve, fake_backend_server, backend, store_url)
    asyncio.run(_write_old_record(backend, store_url))
    assert httpx.get(f"{url}/v1/responses/resp_old").json()["output"][0]["content"][0]["text"] == "Answer 2."
    listed = httpx.get(f"{url}/v1/responses/resp_old/input_items").json()["data"]
    assert [item["id"] for item in listed] == ["msg_u2"]
    third = ask(url, {"model": "qwen3", "input": "Say 3", "previous_response_id": "resp_old"})
    assert text_of(third) == "Answer 3."
    assert fake.last_body["messages"] == messages("Say 1", "Answer 1.", "Say 2", "Answer 2.", "Say 3")
    fourth = ask(url, {"model": "qwen3", "input": "Say 4", "previous_response_id": third.json()["id"]})
    assert text_of(fourth) == "Answer 4."
    assert [message["content"] for message in fake.last_body["messages"]][-3:] == ["Say 3", "Answer 3.", "Say 4"]
    assert len(fake.last_body["messages"]) == 7
    kept = asyncio.run(_record_value(backend, store_url, third.json()["id"]))
    assert kept is not None and b"Say 3" in kept and b"Say 2" not in kept and b"Say 1" not in kept


@EACH_STORE
def test_a_response_in_a_conversation_is_continued_through_the_conversation(
    store_url, serve, fake_backend_server, fake, backend
):
    """A response stored in a conversation keeps no copy of the
    conversation: `previous_response_id` naming it continues the
    conversation's items before its own, then its own. Once the
    conversation no longer holds its items, continuing it is a 404."""
    fake.answer = numbered_answers
    url = gateway(serve, fake_backend_server, backend, store_url)
    conversation = httpx.post(f"{url}/v1/conversations", json={"items": [{"role": "user", "content": "Say 1"}]})
    conversation_id = conversation.json()["id"]
    in_it = ask(url, {"model": "qwen3", "input": "Say 2", "conversation": conversation_id}).json()
    ask(url, {"model": "qwen3", "input": "Say 3", "conversation": conversation_id})  # after it: not continued
    kept = asyncio.run(_record_value(backend, store_url, in_it["id"]))
    assert kept is not None and b"Say 1" not in kept
    after = ask(url, {"model": "qwen3", "input": "Say 3", "previous_response_id": in_it["id"]})
    assert text_of(after) == "Answer 3."
    assert fake.last_body["messages"] == [
        {"role": "user", "content": "Say 1"},
        {"role": "user", "content": "Say 2"},
        {"role": "assistant", "content": "Answer 2.", "reasoning_content": "Thought 2.", "reasoning": "Thought 2."},
        {"role": "user", "content": "Say 3"},
    ]
    for item in (*httpx.get(f"{url}/v1/responses/{in_it['id']}/input_items").json()["data"], *in_it["output"]):
        httpx.delete(f"{url}/v1/conversations/{conversation_id}/items/{item['id']}")
    gone = ask(url, {"model": "qwen3", "input": "Say 3", "previous_response_id": in_it["id"]})
    assert gone.status_code == 404 and gone.json()["error"]["param"] == "previous_response_id"
    assert gone.json()["error"]["message"] == (
        f"Conversation with id '{conversation_id}' not found, or it no longer holds the items of response "
        f"'{in_it['id']}', which previous_response_id continues; start a new chain"
    )
