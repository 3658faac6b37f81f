"""The store across gateway processes (docs/state.md): real `parsegate
serve` subprocesses on a real SQLite file (a restart in the middle of a
chain; a stream its client cuts), and two replicas sharing a real
`redis-server` or PostgreSQL (a chain started on one continues on the
other); a store that is down answers 503 to what needs it. Redis and
PostgreSQL are started here when the machine has them; CI must have them
(.ci/run installs them)."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import httpx
import openai
import orjson
import pytest
import redis
import redis.asyncio
import yaml

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.store import StoredResponse, open_store, records
from gateway.ops.store_config import StoreConfig
from tests.conftest import GatewayProcess, on_this_checkout
from tests.sdk_clients import openai_client
from tests.store_servers import PostgresServer, RedisServer, free_port, postgres_bin, redis_binary

DAY = 86400.0


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must provide {what} (.ci/run installs it)")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    binary = redis_binary()
    if binary is None:
        _missing("redis-server")
    server = RedisServer(binary)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = postgres_bin()
    if bin_dir is None:
        _missing("PostgreSQL (initdb, pg_ctl)")
    server = PostgresServer(bin_dir)
    yield server
    server.stop()


async def _drop_tables(url: str) -> None:
    connection = await asyncpg.connect(url)
    await connection.execute("DROP TABLE IF EXISTS parsegate_records, parsegate_items")
    await connection.close()


@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of the store the test is parametrized with (a shared one's
    data is removed after the test; SQLite's file is the test's own)."""
    if request.param == "sqlite":
        yield str(request.getfixturevalue("tmp_path") / "store.db")
    elif request.param == "redis":
        server = request.getfixturevalue("redis_server")
        yield server.url
        redis.Redis.from_url(server.url).flushall()
    else:
        server = request.getfixturevalue("postgres_server")
        yield server.url
        asyncio.run(_drop_tables(server.url))


def config(fake_backend_server, store: dict) -> dict:
    _, backend_url = fake_backend_server
    model = {"name": "qwen3", "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3"}
    return {"models": [model], "store": store}


def numbered_answers(body: dict) -> str:
    turn = sum(message["role"] == "user" for message in body["messages"])
    return f"<think>Thought {turn}.</think>Answer {turn}."


def history(turns: int) -> list[dict]:
    """The messages the backend receives at turn `turns` + 1 of a numbered chain, before its input."""
    messages: list[dict] = []
    for turn in range(1, turns + 1):
        thought = f"Thought {turn}."
        messages.append({"role": "user", "content": f"Say {turn}"})
        messages.append(
            {"role": "assistant", "content": f"Answer {turn}.", "reasoning_content": thought, "reasoning": thought}
        )
    return messages


def stopped(gateway: GatewayProcess) -> None:
    """Stop the gateway (SIGTERM), which shuts down gracefully."""
    gateway.stop()
    assert any("Application shutdown complete" in line for line in gateway.log)


def test_a_chain_survives_a_restart_with_sqlite(gateway_process, fake_backend_server, fake, tmp_path):
    fake.answer = numbered_answers
    environment = {"PARSEGATE_STORE__URL": str(tmp_path / "store.db")}  # the config's store.url, from the environment
    before = gateway_process(config(fake_backend_server, {}), environment)
    first = openai_client(before.url).responses.create(model="qwen3", input="Say 1")
    stopped(before)
    assert (tmp_path / "store.db").exists()
    after = gateway_process(config(fake_backend_server, {}), environment)
    second = openai_client(after.url).responses.create(model="qwen3", input="Say 2", previous_response_id=first.id)
    assert second.output_text == "Answer 2."
    assert fake.last_body["messages"] == [*history(1), {"role": "user", "content": "Say 2"}]
    assert openai_client(after.url).responses.retrieve(first.id).output_text == "Answer 1."


def test_reads_go_on_while_another_worker_writes_to_sqlite(gateway_process, fake_backend_server, fake, tmp_path):
    """Workers share the SQLite file, whose WAL journal lets readers go on
    while one of them writes: with another connection in the middle of a
    write, a stored response is retrieved and its input items listed
    (before, each read took the write lock, waited for it up to SQLite's
    5 s busy timeout, then answered 503). Once the write ends, the chain
    goes on."""
    fake.answer = numbered_answers
    store = {"backend": "sqlite", "url": str(tmp_path / "store.db")}
    client = openai_client(gateway_process(config(fake_backend_server, store)).url)
    first = client.responses.create(model="qwen3", input="Say 1")
    other_worker = sqlite3.connect(store["url"], isolation_level=None)
    other_worker.execute("BEGIN IMMEDIATE")  # holds the write lock, as a worker does while it writes
    reader = client.with_options(max_retries=0)  # a 503 is the answer, not retried
    try:
        assert reader.responses.retrieve(first.id).output_text == "Answer 1."
        listed = reader.responses.input_items.list(first.id)
        assert [item.content[0].text for item in listed.data] == ["Say 1"]
    finally:
        other_worker.execute("ROLLBACK")
        other_worker.close()
    second = client.responses.create(model="qwen3", input="Say 2", previous_response_id=first.id)
    assert second.output_text == "Answer 2."


class WritesAsked:
    """The store's storage, counting the writes asked of it (`put`: a stored
    response) before they go to the store."""

    def __init__(self, storage: object) -> None:
        self._storage = storage
        self.asked = threading.Semaphore(0)

    def __getattr__(self, name: str) -> object:
        method = getattr(self._storage, name)
        if name != "put":
            return method

        async def put(*args: object, **kwargs: object) -> object:
            self.asked.release()
            return await method(*args, **kwargs)

        return put


def test_a_read_answers_while_writes_wait_for_sqlites_lock(serve, fake_backend_server, fake, tmp_path, monkeypatch):
    """While another connection holds the file's write lock and stored
    requests wait for it, a stored response is retrieved at once: it was
    queued behind them on the store's one thread, each write waiting up to
    its 5 s for the lock (a GET waited 29.6 s, and the writes failed 503
    while it waited). The writes, still within their time, are stored once
    the lock is free."""
    fake.answer = numbered_answers
    settings = config(fake_backend_server, {"backend": "sqlite", "url": str(tmp_path / "store.db")})
    app = create_app(Config.model_validate(settings))
    client = openai_client(serve(app)).with_options(max_retries=0)  # a 503 is the answer, not retried
    first = client.responses.create(model="qwen3", input="Say 1")
    writes = WritesAsked(app.state.store._storage)
    monkeypatch.setattr(app.state.store, "_storage", writes)
    other_worker = sqlite3.connect(str(tmp_path / "store.db"), isolation_level=None)
    other_worker.execute("BEGIN IMMEDIATE")  # holds the write lock, as a worker does while it writes
    with ThreadPoolExecutor(max_workers=3) as requests:
        try:
            storing = [requests.submit(client.responses.create, model="qwen3", input="Say 1") for _ in range(3)]
            for _ in storing:
                writes.asked.acquire()  # each request is at the store, waiting for the lock
            assert client.responses.retrieve(first.id).output_text == "Answer 1."
            assert not any(request.done() for request in storing)  # the GET did not wait for them
        finally:
            other_worker.execute("ROLLBACK")
            other_worker.close()
        stored = [request.result() for request in storing]
    assert [client.responses.retrieve(response.id).output_text for response in stored] == ["Answer 1."] * 3


# what a response says when the store failed after it was answered
NOT_STORED = {
    "code": "store_unavailable",
    "message": "the response store could not be written: this response was not stored: it cannot be retrieved, "
    "or continued with previous_response_id",
}


def test_writes_waiting_for_sqlites_lock_each_give_up_within_their_own_time(
    serve, fake_backend_server, fake, tmp_path, caplog
):
    """While another connection holds the file's write lock, each stored
    request waits for it no longer than `store.write_timeout`, counted from
    when it asked: all of them answer while the lock is still held. Before,
    they waited in turn on the store's one thread, each for its own 5 s:
    the n-th answered after n × 5 s. Each answer is the model's, not
    stored, and says so (it was a 503, and the answer was lost)."""
    fake.answer = numbered_answers
    store = {"backend": "sqlite", "url": str(tmp_path / "store.db"), "write_timeout": 0.2}
    app = create_app(Config.model_validate(config(fake_backend_server, store)))
    client = openai_client(serve(app)).with_options(max_retries=0)
    first = client.responses.create(model="qwen3", input="Say 1")

    def answered() -> httpx.Response:
        body = {"model": "qwen3", "input": "Say 2", "previous_response_id": first.id}
        return httpx.post(f"{client.base_url}responses", json=body, timeout=30)

    other_worker = sqlite3.connect(store["url"], isolation_level=None)
    other_worker.execute("BEGIN IMMEDIATE")  # holds the write lock, as a worker does while it writes
    try:
        with caplog.at_level(logging.ERROR, logger="parsegate.store"), ThreadPoolExecutor(max_workers=4) as requests:
            replies = list(requests.map(lambda _: answered(), range(4)))
        assert [reply.status_code for reply in replies] == [200] * 4  # all while the lock is held
        for reply in replies:
            assert reply.json()["output"][-1]["content"][0]["text"] == "Answer 2."
            assert reply.json()["store"] is False
            assert reply.json()["parsegate_warning"] == NOT_STORED
        assert client.responses.retrieve(first.id).output_text == "Answer 1."
    finally:
        other_worker.execute("ROLLBACK")
        other_worker.close()
    logged = [record.getMessage() for record in caplog.records]
    for reply in replies:
        [line] = [line for line in logged if reply.headers["x-request-id"] in line]
        assert "database is locked" in line
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(reply.json()["id"])
    second = client.responses.create(model="qwen3", input="Say 2", previous_response_id=first.id)
    assert second.output_text == "Answer 2."


def test_a_stream_its_client_cuts_is_stored_incomplete(gateway_process, fake_backend_server, fake, tmp_path):
    fake.script("<think>Long thought.</think>A long answer that never ends", chunk_size=3)
    fake.hold_after = 6
    store = {"backend": "sqlite", "url": str(tmp_path / "store.db")}
    gateway = gateway_process(config(fake_backend_server, store))
    body = {"model": "qwen3", "input": "Hi", "stream": True}
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json=body, timeout=10) as streamed:
        lines = streamed.iter_lines()
        created = next(orjson.loads(line[6:]) for line in lines if line.startswith("data: "))
    assert fake.stream_abandoned.wait(timeout=10)  # the gateway saw the client leave
    stopped(gateway)  # shutting down waits for the store's writes
    restarted = gateway_process(config(fake_backend_server, store))
    stored = openai_client(restarted.url).responses.retrieve(created["response"]["id"])
    assert stored.status == "incomplete" and stored.incomplete_details.reason == "client_disconnected"
    assert stored.output[0].type == "reasoning" and stored.output[0].summary[0].text.startswith("Long")
    assert stored.output[0].status == "incomplete"  # the client's leaving cut it


WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def parsed_chunk(delta: dict) -> bytes:
    """A stream chunk of a backend running its own tool-call parser."""
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    return b"data: " + orjson.dumps({"id": "up-1", "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"


def parsed_call(index: int, arguments: str) -> bytes:
    function = {"name": "get_weather", "arguments": arguments}
    return parsed_chunk({"tool_calls": [{"index": index, "type": "function", "function": function}]})


def raw_text_call(fake) -> None:
    """The model writes one call as raw text; the stream holds in its arguments."""
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    fake.script(text, chunk_size=4)
    fake.hold_after = 1 + (text.index("Paris") + 2 + 3) // 4  # the role, then the chunks up to "Pa"


def backend_parsed_calls(fake) -> None:
    """The backend parses two calls itself: the first whole, the stream holds in the second's arguments."""
    fake.raw_stream = [
        parsed_chunk({"role": "assistant", "content": ""}),
        parsed_call(0, '{"city": "Paris"}'),
        parsed_call(1, '{"city": "Ber'),
        parsed_call(1, 'lin"}'),
    ]
    fake.hold_after = 3


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (raw_text_call, [("incomplete", '{"city": "Paris"}')]),
        (backend_parsed_calls, [("completed", '{"city": "Paris"}'), ("incomplete", '{"city": "Berlin"}')]),
    ],
)
def test_a_call_its_client_cuts_is_stored_incomplete(
    gateway_process, fake_backend_server, fake, tmp_path, script, expected
):
    script(fake)
    store = {"backend": "sqlite", "url": str(tmp_path / "store.db")}
    settings = config(fake_backend_server, store)
    settings["models"][0]["tool_call_parser"] = "qwen25"
    gateway = gateway_process(settings)
    body = {"model": "qwen3", "input": "Weather?", "tools": [WEATHER], "stream": True}
    seen: list[dict] = []
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json=body, timeout=10) as streamed:
        for line in streamed.iter_lines():
            if line.startswith("data: "):
                seen.append(orjson.loads(line[6:]))
                calls = {
                    event["item_id"] for event in seen if event["type"] == "response.function_call_arguments.delta"
                }
                if len(calls) == len(expected):  # the client leaves while the last call is being written
                    break
    assert fake.stream_abandoned.wait(timeout=10)
    stopped(gateway)  # shutting down waits for the store's writes
    restarted = gateway_process(settings)
    stored = openai_client(restarted.url).responses.retrieve(seen[0]["response"]["id"])
    assert stored.status == "incomplete" and stored.incomplete_details.reason == "client_disconnected"
    calls = [item for item in stored.output if item.type == "function_call"]
    assert [call.status for call in calls] == [status for status, _ in expected]
    for call, (status, whole) in zip(calls, expected, strict=True):
        if status == "completed":
            assert call.arguments == whole
        else:  # as far as the model got before the client left
            assert call.arguments and whole.startswith(call.arguments) and call.arguments != whole


@pytest.mark.parametrize("store_url", ["redis", "postgres"], indirect=True)
def test_two_replicas_share_a_chain(store_url, gateway_process, fake_backend_server, fake):
    fake.answer = numbered_answers
    backend = "redis" if store_url.startswith("redis") else "postgres"
    store = {"backend": backend, "url": store_url, "retention_days": 1}
    one, two = (openai_client(gateway_process(config(fake_backend_server, store)).url) for _ in range(2))
    first = one.responses.create(model="qwen3", input="Say 1")
    second = two.responses.create(model="qwen3", input="Say 2", previous_response_id=first.id)
    with one.responses.stream(model="qwen3", input="Say 3", previous_response_id=second.id) as stream:
        third = stream.get_final_response()
    assert third.output_text == "Answer 3."
    assert fake.last_body["messages"] == [*history(2), {"role": "user", "content": "Say 3"}]
    conversation = two.conversations.create(items=[{"role": "user", "content": "Say 1"}])
    one.responses.create(model="qwen3", input="Say 2", conversation=conversation.id)
    assert len(list(two.conversations.items.list(conversation.id))) == 4  # Say 1, Say 2, reasoning, answer
    two.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        one.responses.retrieve(first.id)


def refused(url: str, path: str, items: list[dict]) -> dict:
    """The 400 error body a POST of `items` gets."""
    reply = httpx.post(f"{url}{path}", json={"items": items})
    assert reply.status_code == 400, reply.text
    return reply.json()["error"]


EACH_STORE = pytest.mark.parametrize(
    ("store_url", "backend"), [(name, name) for name in ("sqlite", "redis", "postgres")], indirect=["store_url"]
)


def message(item_id: str) -> dict:
    return {"id": item_id, "type": "message", "role": "user", "content": item_id}


def three_item_gateway(serve, fake_backend_server, backend: str, store_url: str) -> str:
    """A gateway on the store, with `server.max_input_items: 3`."""
    store = {"backend": backend, "url": store_url}
    return serve(
        create_app(Config.model_validate({**config(fake_backend_server, store), "server": {"max_input_items": 3}}))
    )


@EACH_STORE
def test_item_ids_are_unique_in_a_conversation(store_url, serve, fake_backend_server, fake, backend):
    gateway = three_item_gateway(serve, fake_backend_server, backend, store_url)
    client = openai_client(gateway)
    conversation = client.conversations.create(items=[message("msg_a")])
    path = f"/v1/conversations/{conversation.id}/items"
    repeated = refused(gateway, path, [message("msg_b"), message("msg_a")])
    assert repeated["param"] == "items[1].id" and "Duplicate item found with id 'msg_a'" in repeated["message"]
    assert refused(gateway, path, [message("msg_b"), message("msg_b")])["param"] == "items[1].id"
    assert refused(gateway, "/v1/conversations", [message("msg_a")] * 2)["param"] == "items[1].id"
    assert [item.id for item in client.conversations.items.list(conversation.id)] == ["msg_a"]  # nothing added
    client.conversations.items.create(conversation.id, items=[message("msg_b"), message("msg_c")])
    assert client.conversations.items.retrieve("msg_b", conversation_id=conversation.id).content[0].text == "msg_b"
    client.conversations.items.delete("msg_b", conversation_id=conversation.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve("msg_b", conversation_id=conversation.id)
    listed = client.conversations.items.list(conversation.id, order="asc", after="msg_a")
    assert [item.id for item in listed.data] == ["msg_c"]
    client.conversations.items.create(conversation.id, items=[message("msg_b")])  # deleted, so free again


@EACH_STORE
def test_a_conversation_holds_at_most_max_input_items(store_url, serve, fake_backend_server, fake, backend):
    gateway = three_item_gateway(serve, fake_backend_server, backend, store_url)
    client = openai_client(gateway)
    conversation = client.conversations.create(items=[{"role": "user", "content": "One"}])
    client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "Two"}] * 2)
    full = refused(gateway, f"/v1/conversations/{conversation.id}/items", [{"role": "user", "content": "Four"}])
    assert full == {
        "message": "the conversation holds 3 items; 1 more would pass the 3 it may hold (max_input_items): "
        "delete items from it or start a new conversation",
        "type": "invalid_request_error",
        "param": "items",
        "code": "array_above_max_length",
    }
    assert len(client.conversations.items.list(conversation.id).data) == 3
    assert refused(gateway, "/v1/conversations", [{"role": "user", "content": "x"}] * 4)["param"] == "items"


class Decodes:
    """The store's `orjson`, keeping every stored value it decodes."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.dumps = orjson.dumps

    def loads(self, value: bytes) -> object:
        self.values.append(bytes(value))
        return orjson.loads(value)


@EACH_STORE
def test_another_keys_record_is_never_read_out_of_the_store(
    store_url, serve, fake_backend_server, fake, backend, monkeypatch
):
    """Another key's id answers 404 without its record being decoded (it
    was parsed whole before the owner was compared, so that such an id
    answered 13-19 times slower than an unknown one, telling that it
    exists): the store compares the owner itself."""
    settings = {**config(fake_backend_server, {"backend": backend, "url": store_url})}
    settings["server"] = {"api_keys": ["key-mine", "key-other"]}
    gateway = serve(create_app(Config.model_validate(settings)))
    mine, other = (openai_client(gateway, api_key=key) for key in ("key-mine", "key-other"))
    created = mine.responses.create(model="qwen3", input="Secret")
    conversation = mine.conversations.create(items=[{"role": "user", "content": "Secret"}])
    decodes = Decodes()
    monkeypatch.setattr(records, "orjson", decodes)
    for attempt in (
        lambda: other.responses.retrieve(created.id),
        lambda: other.responses.input_items.list(created.id),
        lambda: other.responses.delete(created.id),
        lambda: other.responses.create(model="qwen3", input="Yours?", previous_response_id=created.id),
        lambda: other.conversations.retrieve(conversation.id),
        lambda: other.conversations.update(conversation.id, metadata={"k": "v"}),
        lambda: other.conversations.items.list(conversation.id),
        lambda: other.conversations.delete(conversation.id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert decodes.values == []
    assert mine.responses.retrieve(created.id).id == created.id  # still there, and its own key's to read
    assert mine.conversations.retrieve(conversation.id).id == conversation.id
    assert len(decodes.values) == 2


class DeleteLandsFirst:
    """A store's storage whose next write lets `delete` run first: the
    DELETE of a conversation landing between a request's read of it and
    its write, as it did in 2-18 of 20 tries with SQLite."""

    def __init__(self, storage: object, delete: Callable[[], Awaitable[bool]]) -> None:
        self._storage = storage
        self._delete: Callable[[], Awaitable[bool]] | None = delete

    def __getattr__(self, name: str) -> object:
        method = getattr(self._storage, name)
        if name not in ("put", "replace", "append"):
            return method

        async def write(*args: object, **kwargs: object) -> object:
            if self._delete is not None:
                delete, self._delete = self._delete, None
                assert await delete()  # deleted, as DELETE /v1/conversations/{id} answers
            return await method(*args, **kwargs)

        return write


async def _items_left(backend: str, url: str, conversation_id: str) -> int:
    """The items the store's database holds for the conversation."""
    key = f"conversation:{conversation_id}"
    if backend == "sqlite":
        with sqlite3.connect(url) as db:
            return db.execute("SELECT count(*) FROM items WHERE key = ?", (key,)).fetchone()[0]
    if backend == "redis":
        client = redis.asyncio.Redis.from_url(url)
        count = await client.llen(f"parsegate:order:{key}") + await client.hlen(f"parsegate:items:{key}")
        await client.aclose()
        return count
    connection = await asyncpg.connect(url)
    count = await connection.fetchval("SELECT count(*) FROM parsegate_items WHERE key = $1", key)
    await connection.close()
    return count


@EACH_STORE
def test_a_deleted_conversation_stays_deleted(store_url, serve, fake_backend_server, fake, backend, monkeypatch):
    """An update, an items add or a response whose conversation is deleted
    after they read it and before they write answer 404, and nothing comes
    back: before, the update wrote the whole record back with its items,
    and an add left its items in the store."""
    app = create_app(Config.model_validate(config(fake_backend_server, {"backend": backend, "url": store_url})))
    client = openai_client(serve(app))
    store = app.state.store
    for attempt in (
        lambda conversation: client.conversations.update(conversation, metadata={"k": "v"}),
        lambda conversation: client.conversations.items.create(conversation, items=[{"role": "user", "content": "B"}]),
        lambda conversation: client.responses.create(model="qwen3", input="B", conversation=conversation),
    ):
        conversation = client.conversations.create(items=[{"role": "user", "content": "A"}]).id
        deleting = DeleteLandsFirst(store._storage, lambda c=conversation: store.delete_conversation("", c))
        monkeypatch.setattr(store, "_storage", deleting)
        with pytest.raises(openai.NotFoundError) as gone:
            attempt(conversation)
        assert gone.value.body["message"] == f"Conversation with id '{conversation}' not found"
        assert deleting._delete is None  # the delete landed
        with pytest.raises(openai.NotFoundError):
            client.conversations.retrieve(conversation)
        assert asyncio.run(_items_left(backend, store_url, conversation)) == 0
        monkeypatch.undo()


_REFUSE_RESPONSES_PG = """
CREATE OR REPLACE FUNCTION parsegate_test_refuse() RETURNS trigger AS $$
BEGIN RAISE EXCEPTION 'responses refused'; END $$ LANGUAGE plpgsql;
CREATE TRIGGER refuse_responses BEFORE INSERT ON parsegate_records
FOR EACH ROW WHEN (NEW.key LIKE 'response:%') EXECUTE FUNCTION parsegate_test_refuse();
"""
_REDIS_USER = "gateway-writer"


async def _refuse_responses(backend: str, url: str) -> None:
    """From now on the store's database refuses to write a response record:
    a trigger in SQLite and PostgreSQL, an ACL in Redis that takes
    `parsegate:record:response:*` from the gateway's user."""
    if backend == "sqlite":
        with sqlite3.connect(url) as db:
            db.execute(
                "CREATE TRIGGER refuse_responses BEFORE INSERT ON records WHEN NEW.key LIKE 'response:%' "
                "BEGIN SELECT RAISE(ABORT, 'responses refused'); END"
            )
    elif backend == "redis":
        client = redis.asyncio.Redis.from_url(url)
        keys = ["~parsegate:record:conversation:*", "~parsegate:order:*", "~parsegate:items:*"]
        await client.execute_command("ACL", "SETUSER", _REDIS_USER, "resetkeys", *keys)
        await client.aclose()
    else:
        connection = await asyncpg.connect(url)
        await connection.execute(_REFUSE_RESPONSES_PG)
        await connection.close()


async def _responses_held(backend: str, url: str) -> int:
    """The response records the store's database holds."""
    if backend == "sqlite":
        with sqlite3.connect(url) as db:
            return db.execute("SELECT count(*) FROM records WHERE key LIKE 'response:%'").fetchone()[0]
    if backend == "redis":
        client = redis.asyncio.Redis.from_url(url)
        count = len(await client.keys("parsegate:record:response:*"))
        await client.aclose()
        return count
    connection = await asyncpg.connect(url)
    count = await connection.fetchval("SELECT count(*) FROM parsegate_records WHERE key LIKE 'response:%'")
    await connection.close()
    return count


@pytest.fixture
def writer_url(store_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL the gateway writes through: in Redis, that of a user of its
    own (all keys and commands), whose key permissions a test may narrow."""
    if request.node.callspec.params["backend"] != "redis":
        yield store_url
        return
    admin = redis.Redis.from_url(store_url)
    admin.execute_command("ACL", "SETUSER", _REDIS_USER, "on", ">writer-secret", "~*", "+@all")
    yield store_url.replace("redis://", f"redis://{_REDIS_USER}:writer-secret@")
    admin.execute_command("ACL", "DELUSER", _REDIS_USER)
    admin.close()


@EACH_STORE
def test_a_response_and_its_conversation_items_are_stored_together(
    store_url, writer_url, serve, fake_backend_server, fake, backend
):
    """A response continuing a conversation is stored with the items it
    adds to the conversation in one write: when storing the response fails
    (the database refuses it), neither the response nor its items are
    kept, and the client still gets its answer, streamed or not, saying
    so. Before, the items were added first, and stayed in the conversation
    of a response that was never stored; then the answer was a 503, lost."""
    fake.answer = numbered_answers
    app = create_app(Config.model_validate(config(fake_backend_server, {"backend": backend, "url": writer_url})))
    client = openai_client(serve(app)).with_options(max_retries=0)  # a 503 is the answer, not retried
    conversation = client.conversations.create(items=[{"role": "user", "content": "Say 0"}]).id
    first = client.responses.create(model="qwen3", input="Say 1", conversation=conversation)
    assert client.responses.retrieve(first.id).output_text == "Answer 2."  # the normal path stores both
    kept = [item.id for item in client.conversations.items.list(conversation, order="asc")]
    assert kept[-len(first.output) :] == [item.id for item in first.output] and len(kept) == 2 + len(first.output)
    held = asyncio.run(_items_left(backend, store_url, conversation))  # in the database, as the client lists them
    asyncio.run(_refuse_responses(backend, store_url))
    answered = client.responses.create(model="qwen3", input="Say 2", conversation=conversation)
    with client.responses.stream(model="qwen3", input="Say 2", conversation=conversation) as stream:
        events = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert events[-1] == "response.completed"
    for response in (answered, streamed):
        assert response.output_text == "Answer 3." and response.store is False
        assert response.to_dict()["parsegate_warning"] == {
            "code": "store_unavailable",
            "message": "the response store could not be written: this response was not stored: it cannot be "
            f"retrieved, or continued with previous_response_id, and its input and output were not added to "
            f"conversation {conversation}",
        }
    assert [item.id for item in client.conversations.items.list(conversation, order="asc")] == kept
    assert asyncio.run(_items_left(backend, store_url, conversation)) == held
    assert asyncio.run(_responses_held(backend, store_url)) == 1
    kept_only = client.responses.create(model="qwen3", input="Say 2", conversation=conversation, store=False)
    assert len(client.conversations.items.list(conversation).data) == len(kept) + 1 + len(kept_only.output)


async def _deleted_while_it_waits(url: str, conversation: str, write: Callable[[], object]) -> None:
    """Run `write` (a request that writes to the conversation) while a
    connection of the test holds the conversation's row; once PostgreSQL
    shows the request waiting for that lock (it has read the conversation),
    delete the conversation and its items in that transaction, as DELETE
    /v1/conversations/{id} does, and commit; then let `write` answer."""
    key = f"conversation:{conversation}"
    deleter = await asyncpg.connect(url)
    try:
        async with deleter.transaction():
            await deleter.execute("SELECT 1 FROM parsegate_records WHERE key = $1 FOR UPDATE", key)
            writing = asyncio.ensure_future(asyncio.to_thread(write))
            while not await deleter.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
                assert not writing.done(), writing.result()  # it must wait for the row, not answer
            await deleter.execute("DELETE FROM parsegate_records WHERE key = $1", key)
            await deleter.execute("DELETE FROM parsegate_items WHERE key = $1", key)
        await writing
    finally:
        await deleter.close()


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("write", ["update", "add items"])
def test_a_conversation_deleted_while_a_write_waits_for_it_stays_deleted(
    store_url, serve, fake_backend_server, fake, write
):
    """The same in PostgreSQL's own order of events: a DELETE that commits
    while an update or an items add waits for the conversation's row."""
    settings = config(fake_backend_server, {"backend": "postgres", "url": store_url})
    client = openai_client(serve(create_app(Config.model_validate(settings))))
    conversation = client.conversations.create(items=[{"role": "user", "content": "A"}]).id

    def request() -> object:
        if write == "update":
            return client.conversations.update(conversation, metadata={"k": "v"})
        return client.conversations.items.create(conversation, items=[{"role": "user", "content": "B"}])

    with pytest.raises(openai.NotFoundError):
        asyncio.run(_deleted_while_it_waits(store_url, conversation, request))
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation)
    assert asyncio.run(_items_left("postgres", store_url, conversation)) == 0


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_store_that_is_down_answers_503_to_what_needs_it(
    serve, fake_backend_server, fake, closed_port, backend, tmp_path, caplog
):
    """The 503 says in words that the store failed; what failed (the SQLite
    file's path, the server's address) is logged with the request's id,
    and never sent to the client. A response the store fails only after it
    was answered is not lost: the client gets it, streamed or not, saying
    it was not stored (it was a 503, or a stream ending in
    `response.failed`, after the model had answered)."""
    fake.answer = numbered_answers
    scheme = "redis" if backend == "redis" else "postgresql"
    url = (
        str(tmp_path / "no-such-folder" / "store.db")
        if backend == "sqlite"
        else f"{scheme}://127.0.0.1:{closed_port}/0"
    )
    store = {"backend": backend, "url": url}
    client = openai_client(serve(create_app(Config.model_validate(config(fake_backend_server, store)))))
    with caplog.at_level(logging.ERROR, logger="parsegate.store"):
        answered = client.with_options(max_retries=0).responses.with_raw_response.create(model="qwen3", input="Hi")
    assert answered.parse().output_text == "Answer 1." and answered.parse().store is False  # answered, not stored
    assert answered.parse().to_dict()["parsegate_warning"] == NOT_STORED
    rid = answered.headers["x-request-id"]
    [logged] = [record.getMessage() for record in caplog.records if rid in record.getMessage()]
    assert (url if backend == "sqlite" else str(closed_port)) in logged
    with pytest.raises(openai.InternalServerError) as down:
        client.responses.create(model="qwen3", input="Again", previous_response_id=answered.parse().id)
    assert down.value.status_code == 503
    assert down.value.body == {
        "message": "the response store cannot be reached or written just now; try again later",
        "type": "server_error",
        "param": None,
        "code": "store_unavailable",
    }
    with pytest.raises(openai.InternalServerError):
        client.responses.retrieve("resp_123")
    with pytest.raises(openai.InternalServerError):
        client.conversations.create()
    stream = list(client.responses.create(model="qwen3", input="Hi", store=True, stream=True))
    assert stream[-1].type == "response.completed" and stream[-1].response.output_text == "Answer 1."
    assert stream[-1].response.store is False and stream[-1].response.to_dict()["parsegate_warning"] == NOT_STORED
    assert client.responses.create(model="qwen3", input="Say 1", store=False).output_text == "Answer 1."


async def _rows(store_config: dict) -> int:
    """The records in the store's database."""
    if store_config["backend"] == "sqlite":
        with sqlite3.connect(store_config["url"]) as db:
            return db.execute("SELECT count(*) FROM records").fetchone()[0]
    connection = await asyncpg.connect(store_config["url"])
    count = await connection.fetchval("SELECT count(*) FROM parsegate_records")
    await connection.close()
    return count


async def _expire_and_purge(store_config: dict) -> tuple[bool, int, int]:
    """Whether a response stored with a retention already past reads as
    missing, and the records in the database before and after a purge."""
    store = open_store(StoreConfig.model_validate(store_config))
    assert store is not None
    await store.save_response("", StoredResponse({"id": "resp_expired", "output": []}, [], []))
    missing = await store.response("", "resp_expired") is None
    before = await _rows(store_config)
    await store.purge_expired()
    await store.close()
    return missing, before, await _rows(store_config)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_expired_responses_are_missing_then_purged(request, tmp_path, backend):
    if backend == "sqlite":
        url = str(tmp_path / "store.db")
    else:
        url = request.getfixturevalue("postgres_server").url
        request.addfinalizer(lambda: asyncio.run(_drop_tables(url)))
    store_config = {"backend": backend, "url": url, "retention_days": 1e-9}  # expired 86 µs after the write
    assert asyncio.run(_expire_and_purge(store_config)) == (True, 1, 0)


async def _a_response_stored_during_a_purge(path: str, expired: int) -> tuple[bool, list[bool], int]:
    """`expired` records past their retention and one live one; a response
    stored while they are purged: whether the purge was still going when
    the response was stored, which of the responses read back, and the
    records left."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
    store = open_store(StoreConfig.model_validate({"backend": "sqlite", "url": path}))
    assert store is not None
    await store.save_response("", StoredResponse({"id": "resp_live", "output": []}, [], []))
    with sqlite3.connect(path) as db:
        value = db.execute("SELECT value FROM records").fetchone()[0]
        db.executemany("INSERT INTO records VALUES (?, ?, 0)", ((f"response:resp_{i}", value) for i in range(expired)))
    begun = asyncio.Event()

    async def purge() -> None:
        begun.set()
        await store.purge_expired()  # its first delete is with the store's thread before the task yields

    purging = asyncio.create_task(purge())
    await begun.wait()
    await store.save_response("", StoredResponse({"id": "resp_during", "output": []}, [], []))
    purge_going_on = not purging.done()
    await purging
    found = [await store.response("", name) is not None for name in ("resp_live", "resp_during", "resp_7")]
    await store.close()
    return purge_going_on, found, await _rows({"backend": "sqlite", "url": path})


def test_a_long_purge_lets_responses_be_stored_meanwhile(tmp_path):
    """The hourly purge deletes expired records a batch at a time, each
    batch a transaction of its own: a response stored meanwhile waits for
    one batch, not for the whole purge (which holds SQLite's write lock
    for seconds on a busy store, past the 5 s busy timeout of the other
    workers' writes); and the purge still deletes every expired record."""
    purge_going_on, found, left = asyncio.run(_a_response_stored_during_a_purge(str(tmp_path / "store.db"), 20_000))
    assert purge_going_on
    assert found == [True, True, False]
    assert left == 2


class Clock:
    """`time.time()` for the store, moved by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


async def _a_conversation_in_use(store_config: dict, clock: Clock) -> tuple[dict | None, list[str]]:
    """A conversation (retention: 1 day) whose items are added to at 0.9
    days, read at 1.4 days (after a purge): the conversation and its items."""
    store = open_store(StoreConfig.model_validate({**store_config, "retention_days": 1}))
    assert store is not None
    conversation = {"id": "conv_in_use", "object": "conversation", "created_at": 0, "metadata": {}}
    await store.save_conversation("", conversation)
    await store.add_items("conv_in_use", [{"id": "msg_1", "type": "message"}])
    clock.now += 0.9 * DAY
    await store.add_items("conv_in_use", [{"id": "msg_2", "type": "message"}])
    clock.now += 0.5 * DAY
    await store.purge_expired()
    found = await store.conversation("", "conv_in_use"), [item["id"] for item in await store.items("conv_in_use")]
    await store.close()
    return found


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_adding_items_keeps_the_whole_conversation_for_another_retention(request, tmp_path, monkeypatch, backend):
    if backend == "sqlite":
        url = str(tmp_path / "store.db")
    else:
        url = request.getfixturevalue("postgres_server").url
        request.addfinalizer(lambda: asyncio.run(_drop_tables(url)))
    clock = Clock()
    monkeypatch.setattr(records, "time", clock)
    conversation, items = asyncio.run(_a_conversation_in_use({"backend": backend, "url": url}, clock))
    assert conversation is not None and conversation["id"] == "conv_in_use"
    assert items == ["msg_1", "msg_2"]


def test_adding_items_keeps_the_whole_conversation_for_another_retention_in_redis(redis_server, monkeypatch):
    """Redis expires keys on its own clock: the conversation's keys must
    expire a retention after the last add, which the store's clock put at
    0.9 days from now."""
    clock = Clock()
    monkeypatch.setattr(records, "time", clock)
    asyncio.run(_a_conversation_in_use({"backend": "redis", "url": redis_server.url}, clock))
    client = redis.Redis.from_url(redis_server.url)
    try:
        for kind in ("record", "order", "items"):
            assert client.ttl(f"parsegate:{kind}:conversation:conv_in_use") > 1.8 * DAY
    finally:
        client.flushall()


def serve_exit(tmp_path, store: dict, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`parsegate serve` on a config with `store`, which must exit at start-up."""
    settings = {"models": [{"name": "qwen3", "backend": {"url": "http://127.0.0.1:9/v1"}}], "store": store}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(settings))
    command = [sys.executable, "-m", "gateway", "serve", "--config", "config.yaml", "--port", str(free_port())]
    environment = on_this_checkout({**os.environ, **(env or {})})
    return subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("port", ["99999", "5432x"])
def test_a_store_url_with_a_bad_port_stops_the_start(tmp_path, port):
    """A port no client could connect to is said at start-up, in one line
    without the URL's password (it was a 500 on every request)."""
    exited = serve_exit(tmp_path, {"backend": "postgres", "url": f"postgresql://me:secret@127.0.0.1:{port}/db"})
    assert exited.returncode == 2
    assert exited.stderr == (
        f"parsegate: config.yaml: store: store.url has a port that is not a number from 1 to 65535: {port!r}\n"
    )


def test_a_store_backend_whose_package_is_missing_is_one_line(tmp_path):
    """`store.backend: redis` without `parsegate[store-redis]` is said in
    one line, as a config error (a traceback came first)."""
    missing = tmp_path / "without-redis" / "redis"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'redis\'", name="redis")\n')
    exited = serve_exit(
        tmp_path, {"backend": "redis", "url": "redis://127.0.0.1:6379/0"}, {"PYTHONPATH": str(missing.parent)}
    )
    assert exited.returncode == 2
    assert exited.stderr == (
        "parsegate: config.yaml: store: store.backend redis needs the 'redis' package: "
        "pip install 'parsegate[store-redis]'\n"
    )
