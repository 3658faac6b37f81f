"""Per-key limits shared by two gateway replicas through one real
`redis-server` (store.backend: redis): one key's requests per minute and
requests in flight are counted once for both. Redis is started here when
the machine has it; CI must have it (.ci/run installs it)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import anthropic
import openai
import pytest
import redis

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import anthropic_client, openai_client
from tests.store_servers import RedisServer, redis_binary

MESSAGES = [{"role": "user", "content": "Hi"}]


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


@pytest.fixture
def replicas(serve, fake_backend_server, redis_url: str) -> tuple[str, str]:
    redis.Redis.from_url(redis_url).flushdb()
    _, fake_url = fake_backend_server
    config = Config.model_validate(
        {
            "server": {
                "api_keys": ["sk-shared"],
                "key_limits": {"default": {"requests_per_minute": 3, "concurrent_streams": 1}},
            },
            "store": {"backend": "redis", "url": redis_url},
            "models": [{"name": "qwen3", "backend": {"url": f"{fake_url}/v1"}}],
        }
    )
    urls = []
    for _ in range(2):
        app = create_app(config)
        app.state.key_windows.clock = lambda: 1000.0  # 20 s left of the minute
        urls.append(serve(app))
    return urls[0], urls[1]


def test_two_replicas_share_one_keys_requests_per_minute(replicas, fake):
    one, two = (openai_client(url, api_key="sk-shared") for url in replicas)
    one.chat.completions.create(model="qwen3", messages=MESSAGES)
    two.responses.create(model="qwen3", input="Hi")
    anthropic_client(replicas[0], api_key="sk-shared").messages.create(model="qwen3", max_tokens=9, messages=MESSAGES)
    for client in (one, two):
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(model="qwen3", messages=MESSAGES)
        assert refused.value.response.headers["retry-after"] == "20"
        assert refused.value.response.json()["error"]["code"] == "rate_limit_exceeded"
    with pytest.raises(anthropic.RateLimitError) as refused_messages:
        anthropic_client(replicas[1], api_key="sk-shared").messages.create(
            model="qwen3", max_tokens=9, messages=MESSAGES
        )
    assert refused_messages.value.response.json()["error"]["type"] == "rate_limit_error"
    assert len(fake.requests) == 3


def test_a_stream_on_one_replica_holds_the_keys_slot_on_the_other(replicas, fake):
    one, two = (openai_client(url, api_key="sk-shared") for url in replicas)
    fake.hold_after = 1
    events = iter(one.chat.completions.create(model="qwen3", messages=MESSAGES, stream=True))
    next(events)
    with pytest.raises(openai.RateLimitError) as refused:
        two.chat.completions.create(model="qwen3", messages=MESSAGES)
    assert refused.value.response.headers["retry-after"] == "1"
    assert "requests in flight" in refused.value.response.json()["error"]["message"]
    fake.release()
    assert list(events)
    fake.hold_after = None
    two.chat.completions.create(model="qwen3", messages=MESSAGES)
