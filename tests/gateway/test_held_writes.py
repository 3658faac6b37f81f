"""A client whose socket is full: the gateway's write to it is held by flow
control while the backend's stream goes on (upstream/body_push.py,
`EventStream.write`). Whatever arrives meanwhile, in the same piece of the
backend's body or later, goes out after the held write, in order, and the
stream ends as it would for a fast client.

The app is driven at its ASGI boundary, with a `send` that holds the
first write carrying text until the gateway has done all it can with what
it read (the rest of that piece is handled in the same callback), against a
loopback backend in the same event loop that writes its answer as scripted
HTTP bytes: a piece of the body is one TCP write, so the tests choose what
arrives together, and what arrives while the write is held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.asgi_scope import post_scope

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
END_OF_BODY = b"0\r\n\r\n"
TOOL_TEXT = 'Hello <tool_call>\n{"name": "f", "arguments": {"a'  # a call still open
REQUEST_ID = "held-write-test"


def http_chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def event(payload: dict | bytes) -> bytes:
    return b"data: " + (payload if isinstance(payload, bytes) else orjson.dumps(payload)) + b"\n\n"


def delta(text: str, finish: str | None = None) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})


def request_body(path: str) -> dict:
    tool = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    if path == "/v1/responses":
        return {"model": "m", "input": "Hi", "stream": True, "tools": [{"type": "function", **tool}]}
    if path == "/v1/messages":
        tools = [{"name": "f", "input_schema": tool["parameters"]}]
        return {
            "model": "m",
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 64,
            "stream": True,
            "tools": tools,
        }
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "tools": [{"type": "function", "function": tool}],
    }


async def _scripted_backend(
    body: bytes,
    later: bytes,
    holding: asyncio.Event,
    written: asyncio.Event,
    let_go: asyncio.Event,
    then_reset: bool = False,
) -> tuple[asyncio.Server, str]:
    """A backend that answers with `HEAD` then `body` (one write: `body` may
    come with the headers), and `later` once the client's write is held."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        writer.write(HEAD + body)
        await writer.drain()
        if later:
            await holding.wait()
            writer.write(later)
            await writer.drain()
        written.set()
        if then_reset:  # the connection breaks before the body's last chunk
            writer.transport.abort()
            let_go.set()
            return
        with contextlib.suppress(ConnectionResetError):  # closed mid-stream
            await reader.read()  # until the gateway closes the connection (or pools it, and the test ends)
        let_go.set()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


async def _stream_with_a_held_write(
    path: str,
    body: bytes,
    tmp_path,
    later: bytes = b"",
    client_leaves: bool = False,
    then_reset: bool = False,
    stalls_for: float | None = None,
) -> bytes:
    """What the client got; `client_leaves` while a write is held, or
    `stalls_for` (the send timeout): the client stays and never takes the
    held write."""
    holding, written, let_go = asyncio.Event(), asyncio.Event(), asyncio.Event()
    backend, url = await _scripted_backend(body, later, holding, written, let_go, then_reset)
    config = {
        "server": {"send_timeout": stalls_for or 60},
        "store": {"url": str(tmp_path / "store.db")},
        "models": [
            {
                "name": "m",
                "backend": {"url": url, "server": "vllm", "idle_timeout": 5},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            }
        ],
    }
    app = create_app(Config.model_validate(config))
    sent: list[bytes] = []
    asked = False

    async def receive() -> dict:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": orjson.dumps(request_body(path)), "more_body": False}
        if client_leaves:
            await holding.wait()
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()  # the client stays
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        if message["type"] != "http.response.body":
            return
        if b"Hel" in message["body"] and not holding.is_set():
            holding.set()  # the socket is full: flow control holds this send
            if client_leaves or stalls_for:
                await asyncio.Event().wait()  # and never frees it
            await written.wait()
            await _after_the_callback()
        sent.append(message["body"])

    scope = post_scope(path, (b"x-request-id", REQUEST_ID.encode()))
    try:
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)
            if client_leaves or stalls_for:
                await let_go.wait()  # the gateway closed the backend's connection
    finally:
        backend.close()
    assert holding.is_set(), "no write was held: the test did not test"
    return b"".join(sent)


async def _after_the_callback() -> None:
    """Returns once the loop has run the callbacks due now (the backend's
    piece, on loopback already in the gateway's socket, is read and handled
    whole in one of them)."""
    for _ in range(3):
        await asyncio.sleep(0)


def _run(scenario: Callable[[], Awaitable[bytes]]) -> bytes:
    """The scenario's output; a gateway that hangs fails the test instead of the run."""
    return asyncio.run(asyncio.wait_for(scenario(), 60))


ENDS = {
    "/v1/chat/completions": b"data: [DONE]\n\n",
    "/v1/messages": b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    "/v1/responses": b"event: response.completed\n",
}


@pytest.mark.parametrize("path", list(ENDS))
def test_the_last_text_its_finish_and_done_in_one_piece_end_the_stream_as_usual(path, tmp_path):
    body = http_chunk(delta("Hello") + delta("!", "stop") + event(b"[DONE]")) + END_OF_BODY
    out = _run(lambda: _stream_with_a_held_write(path, body, tmp_path))
    assert ENDS[path] in out
    assert out.index(b"Hello") < out.index(b"!") < out.index(ENDS[path])


@pytest.mark.parametrize("path", list(ENDS))
def test_a_backend_error_after_a_held_write_is_the_streams_error_event(path, tmp_path):
    error = event({"error": {"message": "boom", "type": "x"}})
    body = http_chunk(delta(TOOL_TEXT) + error) + END_OF_BODY
    out = _run(lambda: _stream_with_a_held_write(path, body, tmp_path))
    assert b"boom" in out and out.index(b"Hello") < out.index(b"boom")
    if path == "/v1/responses":
        assert b"event: response.failed\n" in out
    elif path == "/v1/messages":
        assert out.endswith(b'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"boom"}}\n\n')
    else:
        assert out.endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize("path", list(ENDS))
def test_done_without_a_finish_after_a_held_write_ends_with_the_cut_error(path, tmp_path):
    body = http_chunk(delta(TOOL_TEXT) + event(b"[DONE]")) + END_OF_BODY
    out = _run(lambda: _stream_with_a_held_write(path, body, tmp_path))
    assert b"ended the stream early" in out and out.index(b"Hello") < out.index(b"ended the stream early")


@pytest.mark.parametrize("path", list(ENDS))
def test_the_rest_arriving_while_the_first_write_is_held_follows_it(path, tmp_path):
    """The first text comes with the headers (the push takes it over from
    aiohttp), its write is held, and the rest of the body arrives meanwhile:
    the connection is paused and resumed, and the stream ends at once, not at
    the idle timeout."""
    later = http_chunk(delta(" world")) + http_chunk(delta("!", "stop")) + http_chunk(event(b"[DONE]")) + END_OF_BODY
    out = _run(lambda: _stream_with_a_held_write(path, http_chunk(delta("Hello")), tmp_path, later))
    assert b"stopped sending" not in out
    assert out.index(b"Hello") < out.index(b" world") < out.index(b"!") < out.index(ENDS[path])


@pytest.mark.parametrize("path", list(ENDS))
def test_a_client_leaving_with_a_write_held_ends_the_request_and_the_backends_stream(path, tmp_path):
    later = http_chunk(delta(" world"))  # the backend is still streaming
    out = _run(lambda: _stream_with_a_held_write(path, http_chunk(delta("Hello")), tmp_path, later, client_leaves=True))
    assert b"Hello" not in out  # the held write never went out


@pytest.mark.parametrize("path", list(ENDS))
def test_a_client_that_takes_nothing_for_the_send_timeout_has_its_stream_cut(path, tmp_path, caplog):
    """A client that stays connected and reads nothing holds no backend
    stream and no concurrency slot past `server.send_timeout`: the request
    ends (the backend's stream with it) and the response is left unfinished,
    which makes the server close the connection."""
    caplog.set_level(logging.INFO, logger="parsegate.access")
    later = http_chunk(delta(" world"))  # the backend is still streaming
    out = _run(lambda: _stream_with_a_held_write(path, http_chunk(delta("Hello")), tmp_path, later, stalls_for=0.2))
    assert b"Hello" not in out and ENDS[path] not in out
    [cut] = [record for record in caplog.records if record.name == "parsegate.stream"]
    assert cut.getMessage() == "a write to the client stayed blocked for 0.2 s: the stream is cut"
    assert cut.request_id == REQUEST_ID  # the request's own, as in its access line
    [access] = [record for record in caplog.records if record.name == "parsegate.access"]
    assert access.request_id == REQUEST_ID and access.cut == "client_stalled"


@pytest.mark.parametrize("path", list(ENDS))
def test_a_connection_that_breaks_after_done_leaves_the_stream_whole(path, tmp_path):
    """What comes after `[DONE]` is only read so that the connection can go
    back to the pool: its breaking costs the connection, not the stream."""
    body = http_chunk(delta("Hello") + delta("!", "stop") + event(b"[DONE]"))  # and no last chunk
    out = _run(lambda: _stream_with_a_held_write(path, body, tmp_path, then_reset=True))
    assert out.index(b"!") < out.index(ENDS[path])
    assert b"error" not in out.replace(b'"error":null', b"")
