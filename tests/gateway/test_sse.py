"""Event-stream framing on the hot path (gateway/sse.py): backend lines in,
pre-framed events out with keep-alive comments."""

from __future__ import annotations

import asyncio

import pytest
from starlette.background import BackgroundTask

from gateway.api.sse import PING, EventStream
from gateway.backend.sse_reader import EventLines

STREAM = b'data: {"a": "caf\xc3\xa9"}\n\n: comment\r\nevent: x\r\ndata:[DONE]\r\n\r\ndata: last'


def _payloads(pieces: list[bytes]) -> list[bytes]:
    lines = EventLines()
    return [payload for piece in pieces for payload in lines.feed(piece)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_data_payloads_at_any_split(size):
    pieces = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert _payloads(pieces) == [b'{"a": "caf\xc3\xa9"}', b"[DONE]"]  # the stream ends inside `last`


def test_event_stream_sends_framed_events_and_pings_while_quiet():
    async def scenario() -> list[dict]:
        backend_resumed = asyncio.Event()
        sent: list[dict] = []

        async def events():
            yield b"data: 1\n\n"
            await backend_resumed.wait()
            yield b"data: 2\n\n"

        async def send(message: dict) -> None:
            sent.append(message)
            if message.get("body") == PING:
                backend_resumed.set()

        async def receive() -> dict:  # the client stays connected
            await asyncio.Event().wait()

        await EventStream(events(), ping_seconds=0.01)({"type": "http"}, receive, send)
        return sent

    sent = asyncio.run(scenario())
    start, *bodies = sent
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert headers[b"cache-control"] == b"no-store"
    chunks = [message["body"] for message in bodies]
    assert chunks[0] == b"data: 1\n\n" and chunks[-2:] == [b"data: 2\n\n", b""]
    assert set(chunks[1:-2]) == {PING}


def test_a_client_leaving_mid_stream_ends_it_closes_the_events_and_runs_the_background():
    async def scenario() -> tuple[list[dict], list[str]]:
        happened: list[str] = []
        sent: list[dict] = []
        left = asyncio.Event()

        async def events():
            try:
                yield b"data: 1\n\n"
                await asyncio.Event().wait()  # the backend goes quiet
                yield b"data: 2\n\n"
            finally:
                happened.append("events closed")

        async def send(message: dict) -> None:
            sent.append(message)
            if message.get("body") == b"data: 1\n\n":
                left.set()

        async def receive() -> dict:
            await left.wait()
            return {"type": "http.disconnect"}

        async def background() -> None:
            happened.append("background ran")

        stream = EventStream(events(), background=BackgroundTask(background))
        await asyncio.get_running_loop().create_task(stream({"type": "http"}, receive, send))
        return sent, happened

    sent, happened = asyncio.run(scenario())
    assert [message.get("body") for message in sent[1:]] == [b"data: 1\n\n"]  # no end, no ping
    assert happened == ["events closed", "background ran"]
