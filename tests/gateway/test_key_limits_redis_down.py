"""Per-key limits when the Redis that counts them goes away (docs/operations.md,
"When Redis is away"): a real `redis-server`, stopped or paused (SIGSTOP)
under a gateway. The gateway fails open but not unlimited: it counts in its
own process meanwhile, asks Redis again after `RETRY_SECONDS`, and the
in-flight counts of requests that ended while Redis was away are settled
when it is back."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import openai
import pytest
import redis

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.key_limits_config import KeyLimits
from gateway.ops.rate_windows import LocalWindows, Refusal
from gateway.ops.rate_windows_redis import RETRY_SECONDS, RedisWindows
from tests.sdk_clients import openai_client
from tests.store_servers import RedisServer, redis_binary

MESSAGES = [{"role": "user", "content": "Hi"}]
MINUTE_KEY = "parsegate:limits:default-key:requests:16"  # the key's requests in the minute of clock 1000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0  # 20 s left of the minute

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[RedisServer]:
    binary = redis_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide redis-server (.ci/run installs it)")
        pytest.skip("redis-server is not installed")
    server = RedisServer(binary)
    yield server
    server.resume()
    server.stop()


@pytest.fixture
def gateway(serve, fake_backend_server, server) -> tuple[openai.OpenAI, Clock]:
    _, fake_url = fake_backend_server
    config = Config.model_validate(
        {
            "server": {
                "api_keys": ["sk-shared"],
                "api_key_names": {"sk-shared": "default-key"},
                "key_limits": {"default-key": {"requests_per_minute": 3}},
            },
            "store": {"backend": "redis", "url": server.url, "read_timeout": 0.5, "write_timeout": 0.5},
            "models": [{"name": "qwen3", "backend": {"url": f"{fake_url}/v1"}}],
        }
    )
    app = create_app(config)
    clock = Clock()
    app.state.key_windows.clock = clock
    return openai_client(serve(app), api_key="sk-shared"), clock


def ask(client: openai.OpenAI) -> None:
    client.chat.completions.create(model="qwen3", messages=MESSAGES)


def counted_in_redis(server: RedisServer) -> int:
    return int(redis.Redis.from_url(server.url).get(MINUTE_KEY) or 0)


@pytest.mark.parametrize("away", ["stopped", "paused"])
def test_with_redis_away_the_limits_hold_per_process_and_redis_counts_again_once_back(gateway, server, fake, away):
    client, clock = gateway
    ask(client)
    assert counted_in_redis(server) == 1
    server.stop() if away == "stopped" else server.pause()
    ask(client)  # fails open: answered, not a 500
    ask(client)
    ask(client)  # this process's own count allows the limit's 3 ...
    with pytest.raises(openai.RateLimitError) as refused:
        ask(client)  # ... and no more
    assert refused.value.response.headers["retry-after"] == "20"
    server.start() if away == "stopped" else server.resume()
    clock.now += RETRY_SECONDS - 1  # still in this process
    with pytest.raises(openai.RateLimitError):
        ask(client)
    clock.now += 1  # Redis is asked again
    before = counted_in_redis(server)
    ask(client)
    assert counted_in_redis(server) == before + 1


def test_an_in_flight_count_of_a_request_that_ended_while_redis_was_away_is_settled(server):
    limits = KeyLimits(concurrent_streams=1)
    in_flight = "parsegate:limits:alice:in_flight"

    async def scenario() -> list[object]:
        clock = Clock()
        windows = RedisWindows(server.url, 0.5, 0.5, clock)
        try:
            counted = await windows.admit("alice", limits)
            assert counted is windows
            server.pause()
            await counted.end("alice", limits, 0)  # Redis is away: the decrement is owed
            server.resume()
            clock.now += RETRY_SECONDS
            again = await windows.admit("alice", limits)  # settles the debt, then counts this one
            seen = [again is windows, redis.Redis.from_url(server.url).get(in_flight)]
            seen.append(await windows.admit("alice", limits))  # the one stream is taken
            return seen
        finally:
            await windows.close()

    assert asyncio.run(scenario()) == [True, b"1", Refusal("streams", 1)]


def test_a_request_admitted_while_redis_was_away_ends_in_this_process(server):
    limits = KeyLimits(concurrent_streams=1)

    async def scenario() -> list[object]:
        clock = Clock()
        windows = RedisWindows(server.url, 0.5, 0.5, clock)
        try:
            server.stop()
            counted = await windows.admit("bob", limits)
            server.start()
            clock.now += RETRY_SECONDS
            await counted.end("bob", limits, 0)
            return [
                isinstance(counted, LocalWindows),
                redis.Redis.from_url(server.url).get("parsegate:limits:bob:in_flight"),
            ]
        finally:
            await windows.close()

    assert asyncio.run(scenario()) == [True, None]  # never a decrement of Redis's count below what it counted
