"""A Responses continuation goes to the backend URL that served the stored
response it continues (docs/operations.md, "Several URLs"), while that URL
is healthy, whatever its session key says; the stored record keeps the URL
(`url`, read back as optional). Three fake backends, a SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.store import open_store
from gateway.ops.store_config import StoreConfig
from gateway.upstream.balancer import Balancer, rendezvous_rank
from tests.fake_backend import FakeBackend


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def backends(serve) -> list[tuple[FakeBackend, str]]:
    made = [FakeBackend() for _ in range(3)]
    return [(backend, serve(backend.app)) for backend in made]


@pytest.fixture
def fakes(backends) -> list[FakeBackend]:
    for backend, _ in backends:
        backend.reset()
    return [backend for backend, _ in backends]


@pytest.fixture
def spread(serve, backends, tmp_path: Path) -> Iterator[tuple[httpx.Client, Balancer, str]]:
    """A gateway over the three backends (a URL rests 60 s of the balancer's
    clock after one failure) storing in SQLite, a client of it, its balancer
    and its store's file."""
    urls = [f"{url}/v1" for _, url in backends]
    backend = {"urls": urls, "retries": 2, "breaker_failures": 1, "breaker_cooldown": 60}
    store = str(tmp_path / "store.db")
    config = {"models": [{"name": "spread", "backend": backend}], "store": {"backend": "sqlite", "url": store}}
    app = create_app(Config.model_validate(config))
    base_url = serve(app)
    balancer = app.state.backends["spread"].balancer
    balancer.clock = Clock()
    with httpx.Client(base_url=base_url, timeout=10) as client:
        yield client, balancer, store


def home_of(balancer: Balancer, session: str) -> int:
    return max(range(3), key=lambda index: rendezvous_rank(session, balancer.endpoints[index]))


def ask(client: httpx.Client, headers: dict, previous: str | None = None) -> str:
    body: dict = {"model": "spread", "instructions": "You are a coding agent.", "input": "next step"}
    if previous is not None:
        body["previous_response_id"] = previous
    response = client.post("/v1/responses", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["id"]


def served_by(fakes: list[FakeBackend]) -> list[int]:
    return [len(fake.requests) for fake in fakes]


def stored_url(store: str, response_id: str) -> str | None:
    async def read() -> str | None:
        opened = open_store(StoreConfig.model_validate({"backend": "sqlite", "url": store}))
        assert opened is not None
        try:
            value = await opened._storage.get(f"response:{response_id}", 0.0, b"")
        finally:
            await opened.close()
        assert value is not None
        return orjson.loads(value).get("url")

    return asyncio.run(read())


def test_a_continuation_goes_where_its_response_was_served_while_that_url_is_healthy(spread, fakes):
    client, balancer, store = spread
    urls = [endpoint.url for endpoint in balancer.endpoints]
    session = next(f"agent-{n}" for n in count() if home_of(balancer, f"header:agent-{n}") != 0)
    home = home_of(balancer, f"header:{session}")
    headers = {"x-session-affinity": session}
    for index in (1, 2):
        fakes[index].error = (503, b'{"error": {"message": "overloaded"}}')
    first = ask(client, headers)  # its home and the other URL fail: answered by URL 0
    assert [len(fake.requests) for fake in fakes][0] == 1
    assert stored_url(store, first) == urls[0]
    for fake in fakes:
        fake.error = None
        fake.requests.clear()
    balancer.clock.now = 60  # the failed URLs rest no more
    second = ask(client, headers, first)
    assert served_by(fakes) == [1, 0, 0]  # where the first was served, not the session's home
    assert stored_url(store, second) == urls[0]
    fakes[0].error = (503, b'{"error": {"message": "overloaded"}}')
    third = ask(client, headers, second)  # URL 0 fails and rests: the session's home answers
    assert len(fakes[home].requests) == 1
    assert stored_url(store, third) == urls[home]
    fakes[0].error = None
    for fake in fakes:
        fake.requests.clear()
    balancer.clock.now = 120
    ask(client, headers, third)  # URL 0 is back, but the third was served at home
    assert len(fakes[home].requests) == 1 and fakes[0].requests == []


def test_a_response_served_by_no_backend_url_is_continued_by_its_session(spread, fakes):
    """A stored record without a URL (one written before it was kept, or
    whose URL left `backend.urls`) routes by the session key."""
    client, balancer, store = spread
    headers = {"x-session-affinity": "agent-old"}
    first = ask(client, headers)
    home = home_of(balancer, "header:agent-old")
    asyncio.run(_rewrite_url(store, first, None))
    ask(client, headers, first)
    assert len(fakes[home].requests) == 2
    asyncio.run(_rewrite_url(store, first, "http://gone.invalid/v1"))
    ask(client, headers, first)
    assert len(fakes[home].requests) == 3


async def _rewrite_url(store: str, response_id: str, url: str | None) -> None:
    opened = open_store(StoreConfig.model_validate({"backend": "sqlite", "url": store}))
    assert opened is not None
    try:
        key = f"response:{response_id}"
        record = orjson.loads(await opened._storage.get(key, 0.0, b""))
        record.pop("url", None)
        if url is not None:
            record["url"] = url
        await opened._storage.put(key, orjson.dumps(record), opened._expiry())
    finally:
        await opened.close()
