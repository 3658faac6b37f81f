"""A client that leaves a stream mid-way, on every surface: the usage the
backend had reported by then is in the request's log line and metrics.

The gateway app is driven at its ASGI boundary, as uvicorn drives it, so
that the client leaves at a chosen moment: while the gateway waits to send
it an event (a client that stopped reading, then closed the connection).
The backend is the fake one, on loopback."""

from __future__ import annotations

import asyncio
import logging

import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.observe import access_log
from tests.asgi_scope import post_scope

MESSAGES = [{"role": "user", "content": "Hi"}]
LEAVING = {
    "/v1/chat/completions": {"model": "plain", "messages": MESSAGES, "stream": True},
    "/v1/responses": {"model": "plain", "input": "Hi", "stream": True},
    "/v1/messages": {"model": "plain", "messages": MESSAGES, "max_tokens": 64, "stream": True},
}


def usage_event(text: str, completion_tokens: int) -> bytes:
    """A chunk with vLLM's continuous usage stats: the usage so far on every chunk."""
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    usage = {"prompt_tokens": 5, "completion_tokens": completion_tokens, "total_tokens": 5 + completion_tokens}
    return b"data: " + orjson.dumps({"choices": [choice], "usage": usage}) + b"\n\n"


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def log_lines():
    lines, level = LogLines(), access_log.level
    access_log.addHandler(lines)
    access_log.setLevel(logging.INFO)
    yield lines
    access_log.removeHandler(lines)
    access_log.setLevel(level)


async def leave_mid_stream(app: object, path: str, body: dict) -> list[bytes]:
    """POST `body` to `path`; at the event with the second piece of text,
    stop reading, then leave. What the client got."""
    got: list[bytes] = []
    stalled = asyncio.Event()
    requested = False

    async def receive() -> dict:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": orjson.dumps(body), "more_body": False}
        await stalled.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.body":
            got.append(message["body"])
            if b" upon" in message["body"]:
                stalled.set()
                await asyncio.Event().wait()  # the client reads no more

    scope = post_scope(path, (b"x-request-id", b"leaving-1"))
    async with app.router.lifespan_context(app):
        await app(scope, receive, send)
    return got


@pytest.mark.parametrize("path", LEAVING)
def test_a_client_leaving_a_stream_mid_way_still_logs_its_usage(gateway_config, fake, log_lines, path):
    fake.raw_stream = [usage_event("Once", 1), usage_event(" upon", 2), usage_event(" a time", 3)]
    fake.hold_after = 2  # the backend stalls too: the client leaves before the stream ends
    app = create_app(Config.model_validate(gateway_config))
    got = asyncio.run(leave_mid_stream(app, path, LEAVING[path]))
    assert b" upon" in got[-1]

    [line] = [record for record in log_lines.records if getattr(record, "request_id", None) == "leaving-1"]
    assert line.prompt_tokens == 5 and line.completion_tokens >= 1
    assert app.state.metrics.tokens.labels("plain", "prompt")._value.get() == 5
