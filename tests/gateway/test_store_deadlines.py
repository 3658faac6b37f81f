"""A store call's deadline (docs/state.md#stores), against a real
`redis-server` and a real PostgreSQL: a paused server (SIGSTOP: it takes
connections and answers nothing), a table another session locks, a row
another session holds, a server stopped and started again, and a server
that cannot be reached when `parsegate serve` starts. Each store call
answers within its own `store.read_timeout` or `store.write_timeout`,
the store's 503 when the store did not answer, and never waits behind
another request's call."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
import httpx
import openai
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.store.postgres_store import WRITERS
from tests.gateway.test_store_processes import config, numbered_answers, serve_exit
from tests.sdk_clients import openai_client
from tests.store_servers import PostgresServer, RedisServer, postgres_bin, redis_binary

DEADLINE = 1.0  # store.read_timeout and store.write_timeout, seconds: time enough to connect on a busy machine
LEEWAY = 2.0  # seconds past the deadline a busy test machine may take to carry the answer
STORE_DOWN = ("store_unavailable", "the response store cannot be reached or written just now; try again later")

Server = RedisServer | PostgresServer


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must provide {what} (.ci/run installs it)")
    pytest.skip(f"{what} is not installed")


def _started(kind: str) -> Server:
    if kind == "redis":
        binary = redis_binary()
        if binary is None:
            _missing("redis-server")
        return RedisServer(binary)
    bin_dir = postgres_bin()
    if bin_dir is None:
        _missing("PostgreSQL (initdb, pg_ctl)")
    return PostgresServer(bin_dir)


@pytest.fixture
def store_server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A fresh server of the kind the test is parametrized with, this test's own (it is paused or stopped)."""
    server = _started(request.param)
    yield server
    server.stop()


EACH_SERVER = pytest.mark.parametrize("store_server", ["redis", "postgres"], indirect=True)


def backend_of(server: Server) -> str:
    return "redis" if isinstance(server, RedisServer) else "postgres"


def gateway_url(serve, fake_backend_server, server: Server, **timeouts: float) -> str:
    """A gateway storing in `server` (`DEADLINE` for both timeouts unless given)."""
    store = {"backend": backend_of(server), "url": server.url, "read_timeout": DEADLINE, "write_timeout": DEADLINE}
    return serve(create_app(Config.model_validate(config(fake_backend_server, {**store, **timeouts}))))


def gateway(serve, fake_backend_server, server: Server, **timeouts: float) -> openai.OpenAI:
    """A client of a gateway storing in `server`."""
    url = gateway_url(serve, fake_backend_server, server, **timeouts)
    return openai_client(url).with_options(max_retries=0)  # a 503 is the answer, not retried


def refused(call: Callable[[], object]) -> tuple[tuple[str, str], float]:
    """The error code and message `call` is refused with (a 503), and the seconds it took."""
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError) as refusal:
        call()
    took = time.monotonic() - started
    assert refusal.value.status_code == 503
    return (refusal.value.body["code"], refusal.value.body["message"]), took


def unstored(call: Callable[[], Any]) -> tuple[str, float]:
    """A request answered although the store could not keep it (its answer
    is never lost to the store): the warning's code, and the seconds it took."""
    started = time.monotonic()
    response = call()
    took = time.monotonic() - started
    answer = response.to_dict()
    assert answer["store"] is False and answer["output"], answer
    return answer["parsegate_warning"]["code"], took


@EACH_SERVER
def test_a_paused_store_answers_503_within_each_calls_deadline(serve, fake_backend_server, fake, store_server):
    """A stored request (a write) and a GET of a stored response (a read),
    sent together while the server answers nothing, each answer within
    their own deadline: the GET the store's 503, the stored request its
    answer, not stored, saying so. Before, Redis's answered after its
    client's 5 s socket timeout, PostgreSQL's after asyncpg's 10 s
    command timeout. Once the server answers again, so does the store."""
    fake.answer = numbered_answers
    client = gateway(serve, fake_backend_server, store_server)
    first = client.responses.create(model="qwen3", input="Say 1")
    store_server.pause()
    try:
        with ThreadPoolExecutor(max_workers=2) as requests:
            storing = requests.submit(unstored, lambda: client.responses.create(model="qwen3", input="Say 2"))
            reading = requests.submit(refused, lambda: client.responses.retrieve(first.id))
            (stored, store_took), (read, read_took) = storing.result(), reading.result()
    finally:
        store_server.resume()
    assert stored == STORE_DOWN[0] and read == STORE_DOWN
    assert store_took < DEADLINE + LEEWAY and read_took < DEADLINE + LEEWAY, (store_took, read_took)
    assert client.responses.retrieve(first.id).output_text == "Answer 1."
    second = client.responses.create(model="qwen3", input="Say 2", previous_response_id=first.id)
    assert client.responses.retrieve(second.id).output_text == "Answer 2."


async def _while_postgres_holds(url: str, lock: str, calls: list[Callable[[], object]]) -> list[object]:
    """Run `calls` (requests, each on a thread of its own) while a session
    of the test holds `lock` in an open transaction; their answers."""
    locker = await asyncpg.connect(url)
    loop = asyncio.get_running_loop()
    try:
        with ThreadPoolExecutor(max_workers=len(calls)) as threads:
            async with locker.transaction():
                await locker.execute(lock)
                return await asyncio.gather(*(loop.run_in_executor(threads, call) for call in calls))
    finally:
        await locker.close()


@pytest.mark.parametrize("store_server", ["postgres"], indirect=True)
def test_a_locked_postgres_table_answers_503_within_the_deadline(serve, fake_backend_server, fake, store_server):
    """While another session holds the records table in ACCESS EXCLUSIVE
    mode, which every statement on it waits for, reads included
    (https://www.postgresql.org/docs/current/explicit-locking.html), a
    stored request (answered, not stored) and a GET of a stored response
    (the store's 503) each answer within their own deadline (before: after
    asyncpg's 10 s command timeout), and the response that could not be
    stored is not kept."""
    fake.answer = numbered_answers
    client = gateway(serve, fake_backend_server, store_server)
    first = client.responses.create(model="qwen3", input="Say 1")
    stored, read = asyncio.run(
        _while_postgres_holds(
            store_server.url,
            "LOCK TABLE parsegate_records IN ACCESS EXCLUSIVE MODE",
            [
                lambda: unstored(lambda: client.responses.create(model="qwen3", input="Say 2")),
                lambda: refused(lambda: client.responses.retrieve(first.id)),
            ],
        )
    )
    assert [stored[0], read[0]] == [STORE_DOWN[0], STORE_DOWN]
    assert stored[1] < DEADLINE + LEEWAY and read[1] < DEADLINE + LEEWAY, (stored, read)
    assert asyncio.run(_records(store_server.url)) == 1  # the first response only
    assert client.responses.retrieve(first.id).output_text == "Answer 1."


async def _records(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetchval("SELECT count(*) FROM parsegate_records WHERE key LIKE 'response:%'")
    finally:
        await connection.close()


async def _a_read_while_writes_wait(url: str, conversation: str, writes: list[Callable[[], object]], read) -> tuple:
    """While a session of the test holds the conversation's row, run
    `writes` (requests that write it) until PostgreSQL shows `WRITERS` of
    them waiting for the row, then `read`: its answer, whether any write
    had answered by then, and the writes' answers once the row is let go."""
    holder = await asyncpg.connect(url)
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=len(writes) + 1) as threads:
        try:
            async with holder.transaction():
                await holder.execute("SELECT 1 FROM parsegate_records WHERE key = $1 FOR UPDATE", conversation)
                writing = [loop.run_in_executor(threads, write) for write in writes]
                while await holder.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted") < WRITERS:
                    assert not any(write.done() for write in writing), [w.result() for w in writing if w.done()]
                answer = await loop.run_in_executor(threads, read)
                answered = [write.done() for write in writing]
        finally:
            await holder.close()
        return answer, answered, await asyncio.gather(*writing)


@pytest.mark.parametrize("store_server", ["postgres"], indirect=True)
def test_a_read_answers_while_writes_wait_for_a_postgres_row(serve, fake_backend_server, fake, store_server):
    """Writes waiting for a row another session holds take every connection
    writes may use, and more wait for one; a GET of a stored response still
    answers at once: reads go through connections of their own, and under
    MVCC a read does not wait for a row being written. Before, reads and
    writes shared one pool of 10: the GET waited until the writes failed
    at asyncpg's 10 s command timeout. The writes, still within their time,
    are written once the row is let go."""
    fake.answer = numbered_answers
    client = gateway(serve, fake_backend_server, store_server, read_timeout=30.0, write_timeout=60.0)
    first = client.responses.create(model="qwen3", input="Say 1")
    conversation = client.conversations.create(metadata={"turn": "0"}).id
    writes = [
        (lambda turn=turn: client.conversations.update(conversation, metadata={"turn": str(turn)}))
        for turn in range(1, WRITERS + 3)
    ]
    answer, answered, updated = asyncio.run(
        _a_read_while_writes_wait(
            store_server.url, f"conversation:{conversation}", writes, lambda: client.responses.retrieve(first.id)
        )
    )
    assert answer.output_text == "Answer 1."
    assert not any(answered)  # the GET did not wait for them
    assert sorted(int(update.metadata["turn"]) for update in updated) == list(range(1, WRITERS + 3))
    assert client.conversations.retrieve(conversation).metadata["turn"] in {str(n) for n in range(1, WRITERS + 3)}


@EACH_SERVER
def test_a_store_restarted_mid_run_serves_again(serve, fake_backend_server, fake, store_server):
    """A store stopped while the gateway runs is the store's 503 to the
    requests that need it, and answers again once it is back, without
    restarting the gateway (its connections to the old server are dropped
    and new ones opened)."""
    fake.answer = numbered_answers
    client = gateway(serve, fake_backend_server, store_server, read_timeout=5.0, write_timeout=5.0)
    first = client.responses.create(model="qwen3", input="Say 1")
    if isinstance(store_server, RedisServer):
        store_server.stop()
    else:
        store_server.halt()
    said, _ = refused(lambda: client.responses.retrieve(first.id))
    assert said == STORE_DOWN
    assert unstored(lambda: client.responses.create(model="qwen3", input="Say 1"))[0] == STORE_DOWN[0]
    store_server.start()
    again = client.responses.create(model="qwen3", input="Say 1")
    assert client.responses.retrieve(again.id).output_text == "Answer 1."
    if isinstance(store_server, PostgresServer):  # its data outlived the restart
        assert client.responses.retrieve(first.id).output_text == "Answer 1."


@EACH_SERVER
def test_a_stream_whose_store_stops_answering_ends_within_the_deadline(serve, fake_backend_server, fake, store_server):
    """The store stops answering while a stored response streams: once the
    backend's answer is all there, the stream's last event (the response
    as it ends) arrives within `store.write_timeout`, and the stream is
    well-formed to the end. Before, it came after the client's own
    timeout (Redis: 5 s; PostgreSQL: 10 s)."""
    fake.script("<think>Long thought.</think>A long answer.", chunk_size=3)
    fake.hold_after = 6
    url = gateway_url(serve, fake_backend_server, store_server)
    body = {"model": "qwen3", "input": "Hi", "stream": True}
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as streamed:
        events = (orjson.loads(line[6:]) for line in streamed.iter_lines() if line.startswith("data: "))
        created = next(events)
        assert fake.held.wait(timeout=10)  # the stream has started, and waits for the backend
        store_server.pause()
        try:
            fake.release()
            started = time.monotonic()
            rest = list(events)
            took = time.monotonic() - started
        finally:
            store_server.resume()
    assert created["type"] == "response.created"
    assert took < DEADLINE + LEEWAY, took
    ends = [event["type"] for event in rest if event["type"] in ("response.completed", "response.failed")]
    assert ends == [rest[-1]["type"]]  # one end, the last event
    assert [event["sequence_number"] for event in [created, *rest]] == list(range(len(rest) + 1))


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_store_that_cannot_be_reached_stops_the_start(tmp_path, closed_port, backend):
    """`parsegate serve` asks the store a trivial question before it
    starts, and stops with one line naming the backend and what failed,
    without the URL's password; it started, and every request that
    needed the store was a 503 (a 500 before that)."""
    url = {
        "sqlite": str(tmp_path / "no-such-folder" / "store.db"),
        "redis": f"redis://me:secret@127.0.0.1:{closed_port}/0",
        "postgres": f"postgresql://me:secret@127.0.0.1:{closed_port}/db",
    }[backend]
    exited = serve_exit(tmp_path, {"backend": backend, "url": url})
    assert exited.returncode == 1
    [line] = exited.stderr.splitlines()
    assert line.startswith(f"parsegate: store.backend {backend} cannot be used: the ")
    assert (url if backend == "sqlite" else f"127.0.0.1:{closed_port}") in line
    assert "secret" not in exited.stderr
    assert "model qwen3" not in exited.stdout + exited.stderr  # before any start-up line


@EACH_SERVER
def test_a_store_that_does_not_answer_stops_the_start_within_its_deadline(tmp_path, store_server):
    """A server that takes the connection and answers nothing is asked no
    longer than `store.read_timeout`."""
    store = {"backend": backend_of(store_server), "url": store_server.url, "read_timeout": DEADLINE}
    store_server.pause()
    try:
        exited = serve_exit(tmp_path, store)
    finally:
        store_server.resume()
    assert exited.returncode == 1
    assert exited.stderr == (
        f"parsegate: store.backend {store['backend']} cannot be used: the "
        f"{'Redis' if store['backend'] == 'redis' else 'PostgreSQL'} store at 127.0.0.1:{store_server.port} "
        f"did not answer within store.read_timeout ({DEADLINE:g} s)\n"
    )
