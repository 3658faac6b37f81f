"""A key's limits on one model (`model_rpm_limit`, `model_tpm_limit`,
`model_concurrent_streams` in `server.key_limits`, docs/operations.md
"Per-model limits"): counted apart from the key's other models, in this
process and across two replicas sharing a real `redis-server`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import anthropic
import httpx
import openai
import orjson
import pytest
import redis
from websockets.sync.client import ClientConnection, connect

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import anthropic_client, openai_client
from tests.store_servers import RedisServer, redis_binary

MESSAGES = [{"role": "user", "content": "Hi"}]
LIMITS = {
    "alice": {
        "requests_per_minute": 100,
        "model_rpm_limit": {"qwen3": 2},
        "model_tpm_limit": {"glm": 30},
        "model_concurrent_streams": {"qwen3": 1},
    }
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0  # 20 s left of the minute

    def __call__(self) -> float:
        return self.now


def config(fake_url: str, store: dict) -> Config:
    backend = {"url": f"{fake_url}/v1"}
    return Config.model_validate(
        {
            "server": {"api_keys": ["sk-alice"], "api_key_names": {"sk-alice": "alice"}, "key_limits": LIMITS},
            "store": store,
            "models": [{"name": "qwen3", "backend": backend}, {"name": "glm", "backend": backend}],
        }
    )


@pytest.fixture
def gateway(serve, fake_backend_server) -> tuple[str, Clock]:
    _, fake_url = fake_backend_server
    app = create_app(config(fake_url, {"backend": "none"}))
    clock = Clock()
    app.state.key_windows.clock = clock
    return serve(app), clock


def call(surface: str, url: str, model: str, **extra: object) -> object:
    if surface == "messages":
        return anthropic_client(url, api_key="sk-alice").messages.create(
            model=model, max_tokens=9, messages=MESSAGES, **extra
        )
    client = openai_client(url, api_key="sk-alice")
    if surface == "responses":
        return client.responses.create(model=model, input="Hi", **extra)
    if surface == "completions":
        return client.completions.create(model=model, prompt="Hi", **extra)
    return client.chat.completions.create(model=model, messages=MESSAGES, **extra)


def refused(surface: str, url: str, model: str) -> httpx.Response:
    errors = (anthropic.RateLimitError,) if surface == "messages" else (openai.RateLimitError,)
    with pytest.raises(errors) as caught:
        call(surface, url, model)
    return caught.value.response


def message_of(surface: str, response: httpx.Response) -> str:
    body = response.json()
    if surface == "messages":
        assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    else:
        assert body["error"]["type"] == "rate_limit_error" and body["error"]["code"] == "rate_limit_exceeded"
    return body["error"]["message"]


@pytest.mark.parametrize("surface", ["chat", "responses", "messages", "completions"])
def test_a_models_requests_per_minute_leave_the_keys_other_models_alone(gateway, fake, surface):
    url, clock = gateway
    call(surface, url, "qwen3")
    call(surface, url, "qwen3")
    response = refused(surface, url, "qwen3")
    assert response.headers["retry-after"] == "20"
    expected = "API key 'alice' is over its limit of requests per minute on model 'qwen3'; retry in 20 s"
    assert message_of(surface, response) == expected
    call(surface, url, "glm")  # no limit of requests on glm
    assert len(fake.requests) == 3
    clock.now = 1020.0
    call(surface, url, "qwen3")


def test_a_models_tokens_per_minute(gateway, fake):
    url, clock = gateway
    call("chat", url, "glm")  # 18 tokens
    call("chat", url, "glm")  # 36 of 30
    assert "tokens per minute on model 'glm'" in message_of("chat", refused("chat", url, "glm"))
    call("chat", url, "qwen3")
    clock.now = 1020.0
    call("chat", url, "glm")


def test_a_models_streams_in_flight(gateway, fake):
    url, _ = gateway
    fake.hold_after = 1
    events = iter(call("chat", url, "qwen3", stream=True))
    next(events)
    response = refused("chat", url, "qwen3")
    assert response.headers["retry-after"] == "1"
    assert "requests in flight on model 'qwen3'" in message_of("chat", response)
    fake.release()
    assert list(events)
    fake.hold_after = None
    call("chat", url, "qwen3")  # the slot is free again


def test_per_model_limits_are_checked_at_start():
    with pytest.raises(ValueError, match="model_rpm_limit.qwen3"):
        Config.model_validate({"server": {"key_limits": {"default": {"model_rpm_limit": {"qwen3": 0}}}}, "models": []})


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    binary = redis_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide redis-server (.ci/run installs it)")
        pytest.skip("redis-server is not installed")
    server = RedisServer(binary)
    yield server.url
    server.stop()


def test_two_replicas_share_a_models_requests_per_minute(serve, fake_backend_server, redis_url, fake):
    redis.Redis.from_url(redis_url).flushdb()
    _, fake_url = fake_backend_server
    urls = []
    for _ in range(2):
        app = create_app(config(fake_url, {"backend": "redis", "url": redis_url}))
        app.state.key_windows.clock = Clock()
        urls.append(serve(app))
    one, two = urls
    call("chat", one, "qwen3")
    call("responses", two, "qwen3")
    assert "on model 'qwen3'" in message_of("chat", refused("chat", one, "qwen3"))
    assert "on model 'qwen3'" in message_of("messages", refused("messages", two, "qwen3"))
    call("chat", two, "glm")
    assert len(fake.requests) == 3


def test_a_websocket_turn_counts_against_its_models_limits(gateway, fake):
    url, _ = gateway
    fake.script("Hello.")
    headers = {"Authorization": "Bearer sk-alice"}
    with connect(url.replace("http://", "ws://", 1) + "/v1/responses", additional_headers=headers) as socket:
        answered = [socket_turn(socket, model="qwen3", input="Hi", store=False) for _ in range(2)]
        refused = socket_turn(socket, model="qwen3", input="Hi", store=False)
        other = socket_turn(socket, model="glm", input="Hi", store=False)
    assert [messages[-1]["type"] for messages in answered] == ["response.completed"] * 2
    assert refused == [{"type": "error", "status": 429, "error": refused[0]["error"]}]
    assert "requests per minute on model 'qwen3'" in refused[0]["error"]["message"]
    assert other[-1]["type"] == "response.completed"


def socket_turn(socket: ClientConnection, **fields: object) -> list[dict]:
    """One `response.create` and the messages answering it, up to its final one."""
    socket.send(orjson.dumps({"type": "response.create", **fields}).decode())
    messages = [orjson.loads(socket.recv(timeout=30))]
    while messages[-1]["type"] not in ("response.completed", "response.failed", "response.incomplete", "error"):
        messages.append(orjson.loads(socket.recv(timeout=30)))
    return messages
