"""Per-key limits (docs/configuration.md, "Per-key limits"): requests and
tokens per minute and requests in flight, per API key, from
`server.api_keys_file` and `server.key_limits`, through the official
SDKs (no retries: tests/sdk_clients.py). Time is a clock the test moves."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.rate_windows import LocalWindows
from tests.sdk_clients import anthropic_client, openai_client

MESSAGES = [{"role": "user", "content": "Hi"}]
KEYS_FILE = """\
# a plain line: a key with no limits of its own
sk-plain
sk-rpm name=alice requests_per_minute=2
sk-tpm name=bob tokens_per_minute=30
sk-streams name=carol concurrent_streams=1
"""


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(1000.0)  # 40 s into the minute that ends at 1020


@pytest.fixture
def gateway(serve, fake_backend_server, tmp_path: Path, clock: Clock) -> tuple[str, object]:
    _, fake_url = fake_backend_server
    keys = tmp_path / "keys"
    keys.write_text(KEYS_FILE)
    config = {
        "server": {"api_keys_file": str(keys), "key_limits": {"default": {"requests_per_minute": 100}}},
        "store": {"backend": "none"},
        "models": [{"name": "qwen3", "backend": {"url": f"{fake_url}/v1"}, "reasoning_parser": "qwen3"}],
    }
    app = create_app(Config.model_validate(config))
    app.state.key_windows = LocalWindows(clock)
    return serve(app), app


def _call(surface: str, url: str, key: str, **extra: object) -> object:
    if surface == "messages":
        return anthropic_client(url, api_key=key).messages.create(
            model="qwen3", max_tokens=9, messages=MESSAGES, **extra
        )
    client = openai_client(url, api_key=key)
    if surface == "responses":
        return client.responses.create(model="qwen3", input="Hi", **extra)
    return client.chat.completions.create(model="qwen3", messages=MESSAGES, **extra)


def _refused(surface: str, url: str, key: str) -> httpx.Response:
    errors = (anthropic.RateLimitError,) if surface == "messages" else (openai.RateLimitError,)
    with pytest.raises(errors) as refused:
        _call(surface, url, key)
    return refused.value.response


def _limit_error(surface: str, response: httpx.Response) -> str:
    """The refusal's message, after checking the surface's own shape."""
    assert response.status_code == 429
    body = response.json()
    if surface == "messages":
        assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
        return body["error"]["message"]
    assert body["error"]["type"] == "rate_limit_error" and body["error"]["code"] == "rate_limit_exceeded"
    return body["error"]["message"]


def _metric(url: str, key: str, limit: str) -> str | None:
    prefix = f'parsegate_rate_limited_total{{key="{key}",limit="{limit}"}} '
    lines = httpx.get(f"{url}/metrics").text.splitlines()
    return next((line.removeprefix(prefix) for line in lines if line.startswith(prefix)), None)


@pytest.mark.parametrize("surface", ["chat", "responses", "messages"])
def test_requests_per_minute_is_a_429_until_the_minute_ends(gateway, fake, clock, surface):
    url, _ = gateway
    _call(surface, url, "sk-rpm")
    _call(surface, url, "sk-rpm")
    refused = _refused(surface, url, "sk-rpm")
    assert refused.headers["retry-after"] == "20"
    message = _limit_error(surface, refused)
    assert message == "API key 'alice' is over its limit of requests per minute; retry in 20 s"
    assert _metric(url, "alice", "requests") == "1.0"
    assert len(fake.requests) == 2
    _call(surface, url, "sk-plain")  # another key: its own count (the default's 100)
    clock.now = 1020.0
    _call(surface, url, "sk-rpm")


@pytest.mark.parametrize("surface", ["chat", "responses", "messages"])
def test_tokens_per_minute_counts_the_backends_usage(gateway, fake, clock, surface):
    url, _ = gateway
    stream = {"stream": True, "stream_options": {"include_usage": True}} if surface == "chat" else {"stream": True}
    for _ in _call(surface, url, "sk-tpm", **stream):  # 18 tokens (prompt 7, completion 11), streamed
        pass
    _call(surface, url, "sk-tpm")  # 36 of 30
    clock.now = 1001.5
    refused = _refused(surface, url, "sk-tpm")
    assert refused.headers["retry-after"] == "19"
    assert "over its limit of tokens per minute" in _limit_error(surface, refused)
    assert _metric(url, "bob", "tokens") == "1.0"
    clock.now = 1020.0
    _call(surface, url, "sk-tpm")


@pytest.mark.parametrize("surface", ["chat", "responses", "messages"])
def test_a_stream_holds_its_keys_slot_until_it_ends(gateway, fake, surface):
    url, _ = gateway
    fake.hold_after = 1
    stream = _call(surface, url, "sk-streams", stream=True)
    events = iter(stream)
    next(events)
    refused = _refused(surface, url, "sk-streams")
    assert refused.headers["retry-after"] == "1"
    assert "over its limit of requests in flight" in _limit_error(surface, refused)
    fake.release()
    assert list(events)  # the rest of the stream: it ended
    fake.hold_after = None
    _call(surface, url, "sk-streams")
    assert _metric(url, "carol", "streams") == "1.0"


@pytest.fixture
def access_log() -> Iterator[Callable[[str], threading.Event]]:
    """`logged(request_id)`: an event set when that request's access-log
    line is written, as the request's last act (ops/observe.py)."""
    waiting: dict[str, threading.Event] = {}

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            event = waiting.get(getattr(record, "request_id", ""))
            if event is not None:
                event.set()

    logger = logging.getLogger("parsegate.access")
    handler, level = Handler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda request_id: waiting.setdefault(request_id, threading.Event())
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_client_that_leaves_frees_its_keys_slot(gateway, fake, access_log):
    url, _ = gateway
    fake.hold_after = 1
    logged = access_log("left-1")
    client = openai_client(url, api_key="sk-streams", default_headers={"x-request-id": "left-1"})
    stream = client.chat.completions.create(model="qwen3", messages=MESSAGES, stream=True)
    next(iter(stream))
    stream.close()
    assert logged.wait(10)
    fake.hold_after = None
    _call("chat", url, "sk-streams")  # not refused: the slot is free
    assert len(fake.requests) == 2


def test_without_limits_a_key_is_not_counted(gateway, fake):
    url, app = gateway
    for _ in range(3):
        _call("chat", url, "sk-plain")
    assert app.state.config.server.limits_of(b"sk-unknown") is None
    with pytest.raises(openai.AuthenticationError):
        _call("chat", url, "sk-unknown")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("sk-x requests_per_minute", "api_keys_file line 1: 'requests_per_minute' is not name=value"),
        ("sk-x rpm=5", "api_keys_file line 1: 'rpm=5': takes name, requests_per_minute, tokens_per_minute, "),
        ("sk-x concurrent_streams=0", "api_keys_file line 1: Input should be greater than or equal to 1"),
    ],
)
def test_a_keys_file_line_with_bad_limits_is_refused_at_start(tmp_path, line, message):
    keys = tmp_path / "keys"
    keys.write_text(line + "\n")
    with pytest.raises(ValueError, match="api_keys_file line") as refused:
        Config.model_validate({"server": {"api_keys_file": str(keys)}, "models": []})
    assert message in str(refused.value)
