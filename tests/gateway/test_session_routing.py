"""Session-affine routing over several backend URLs (docs/operations.md,
"Several URLs"): three fake backends on loopback behind one model entry."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import FakeBackend

SYSTEM = {"role": "system", "content": "You are a coding agent."}


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
def spread(serve, backends) -> Iterator[tuple[httpx.Client, Clock]]:
    """A gateway over the three backends (a URL is skipped after one failure
    for 60 s of `clock`), and a client of it."""
    urls = [f"{url}/v1" for _, url in backends]
    backend = {"urls": urls, "retries": 2, "breaker_failures": 1, "breaker_cooldown": 60}
    app = create_app(Config.model_validate({"models": [{"name": "spread", "backend": backend}]}))
    base_url = serve(app)
    clock = Clock()
    app.state.backends["spread"].balancer.clock = clock
    with httpx.Client(base_url=base_url, timeout=10) as client:
        yield client, clock


def served_by(fakes: list[FakeBackend]) -> list[int]:
    return [len(fake.requests) for fake in fakes]


def chat_turns(client: httpx.Client, turns: int, headers: dict | None = None, **fields: object) -> None:
    """A session of `turns` turns, each with the history before it."""
    messages: list[dict] = [SYSTEM]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"step {turn}"})
        body = {"model": "spread", "messages": messages, **fields}
        response = client.post("/v1/chat/completions", json=body, headers=headers)
        assert response.status_code == 200, response.text
        messages.append(response.json()["choices"][0]["message"])


@pytest.mark.parametrize(
    ("headers", "fields"),
    [
        ({"x-claude-code-session-id": "claude-1"}, {}),
        ({"session_id": "codex-1"}, {}),
        ({}, {"prompt_cache_key": "cache-1"}),
        ({}, {"user": "alice"}),
        ({}, {}),  # the hash of the system prompt and the first user message
    ],
)
def test_a_sessions_turns_land_on_one_url(spread, fakes, headers, fields):
    client, _ = spread
    chat_turns(client, 6, headers, **fields)
    assert sorted(served_by(fakes)) == [0, 0, 6]


def test_sessions_spread_over_the_urls(spread, fakes):
    client, _ = spread
    for session in range(30):
        chat_turns(client, 2, {"x-session-affinity": f"agent-{session}"})
    assert sum(served_by(fakes)) == 60 and min(served_by(fakes)) > 0


def test_a_broken_urls_sessions_move_and_come_back(spread, fakes):
    client, clock = spread
    sessions = [{"x-claude-code-session-id": f"agent-{session}"} for session in range(12)]
    homes = []
    for headers in sessions:
        chat_turns(client, 1, headers)
        homes.append(served_by(fakes).index(1) if sum(served_by(fakes)) == 1 else None)
        for fake in fakes:
            fake.requests.clear()
    broken = max(range(3), key=homes.count)
    fakes[broken].error = (503, b"overloaded")
    for headers in sessions:
        chat_turns(client, 1, headers)  # the first is retried elsewhere, and the URL rests
    assert len(fakes[broken].requests) == 1
    fakes[broken].error = None
    fakes[broken].requests.clear()
    for headers in sessions:
        chat_turns(client, 1, headers)
    assert fakes[broken].requests == []  # still resting
    clock.now = 60
    for fake in fakes:
        fake.requests.clear()
    for headers, home in zip(sessions, homes, strict=True):
        chat_turns(client, 1, headers)
        assert served_by(fakes).index(1) == home
        for fake in fakes:
            fake.requests.clear()


def test_a_responses_chain_stays_on_one_url(spread, fakes):
    client, _ = spread
    previous = None
    for turn in range(5):
        body = {"model": "spread", "instructions": "You are a coding agent.", "input": f"step {turn}"}
        if previous is not None:
            body["previous_response_id"] = previous
        response = client.post("/v1/responses", json=body)
        assert response.status_code == 200, response.text
        previous = response.json()["id"]
    assert sorted(served_by(fakes)) == [0, 0, 5]


def test_an_anthropic_sessions_turns_land_on_one_url(spread, fakes):
    client, _ = spread
    messages: list[dict] = []
    for turn in range(4):
        messages.append({"role": "user", "content": f"step {turn}"})
        body = {"model": "spread", "max_tokens": 50, "system": "You are a coding agent.", "messages": messages}
        response = client.post("/v1/messages", json=body, headers={"x-claude-code-session-id": "claude-2"})
        assert response.status_code == 200, response.text
        messages.append({"role": "assistant", "content": response.json()["content"]})
    assert sorted(served_by(fakes)) == [0, 0, 4]
