"""Event-stream framing on the hot path (gateway/sse.py): backend lines in,
pre-framed events out with keep-alive comments."""

from __future__ import annotations

import asyncio

import pytest
from starlette.background import BackgroundTask

from gateway.api.sse import SEND_TIMEOUT, ClientStalled, EventStream
from gateway.api.sse_frames import PING
from gateway.upstream.sse_reader import EventLines
from tests import virtual_clock

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

STREAM = b'data: {"a": "caf\xc3\xa9"}\n\n: comment\r\nevent: x\r\ndata:[DONE]\r\n\r\ndata: last'


def _payloads(pieces: list[bytes]) -> list[bytes]:
    lines = EventLines()
    return [payload for piece in pieces for payload in lines.feed(piece)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_data_payloads_at_any_split(size):
    pieces = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert _payloads(pieces) == [b'{"a": "caf\xc3\xa9"}', b"[DONE]"]  # the stream ends inside `last`


def test_data_payloads_a_whole_event_per_piece():
    """Each piece one whole event, as a paced backend sends them (the short
    way), also after a piece that ended inside a line."""
    pieces = [b'data: {"a": 1}\n\n', b"data: x\r\n\r\n", b"data:", b' {"b": 2}\n\n', b"data: [DONE]\n\n"]
    assert _payloads(pieces) == [b'{"a": 1}', b"x", b'{"b": 2}', b"[DONE]"]
    assert _payloads([b"data: held", b"data: y\n\n"]) == [b"helddata: y"]


MULTI_LINE = b'data: {"a":\r\ndata: 1}\r\n\r\n: comment\ndata: {"b": 2}\ndata:\n\ndata: [DONE]\n\ndata: open\n'


@pytest.mark.parametrize("size", [1, 2, 3, 7, 13, len(MULTI_LINE)])
def test_an_event_of_several_data_lines_is_one_payload_at_any_split(size):
    """The `data:` lines of one event joined by a line feed (the HTML
    standard's event-stream interpretation), a CR LF line end split between
    two pieces counted once; the event still open when the stream ends is dropped."""
    pieces = [MULTI_LINE[i : i + size] for i in range(0, len(MULTI_LINE), size)]
    assert _payloads(pieces) == [b'{"a":\n1}', b'{"b": 2}\n', b"[DONE]"]


def test_an_event_of_several_data_lines_waits_for_its_blank_line():
    lines = EventLines()
    assert lines.feed(b'data: {"a":\n') == []
    assert lines.feed(b"data: 1}\n") == []
    assert lines.feed(b'\ndata: {"b": 2}\n\n') == [b'{"a":\n1}', b'{"b": 2}']
    assert lines.feed(b'data: {"c": 3}\n\n') == [b'{"c": 3}']  # the short way again


def test_event_stream_sends_framed_events_and_pings_while_quiet():
    async def scenario() -> list[dict]:
        backend_resumed = asyncio.Event()
        sent: list[dict] = []

        async def events(out: EventStream) -> None:
            await out.send(b"data: 1\n\n")
            await backend_resumed.wait()
            await out.send(b"data: 2\n\n")

        async def send(message: dict) -> None:
            sent.append(message)
            if message.get("body") == PING:
                backend_resumed.set()

        async def receive() -> dict:  # the client stays connected
            await asyncio.Event().wait()

        await EventStream(events, ping_seconds=0.01)({"type": "http"}, receive, send)
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

        async def events(out: EventStream) -> None:
            try:
                await out.send(b"data: 1\n\n")
                await asyncio.Event().wait()  # the backend goes quiet
                await out.send(b"data: 2\n\n")
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

        stream = EventStream(events, background=BackgroundTask(background))
        await asyncio.get_running_loop().create_task(stream({"type": "http"}, receive, send))
        return sent, happened

    sent, happened = asyncio.run(scenario())
    assert [message.get("body") for message in sent[1:]] == [b"data: 1\n\n"]  # no end, no ping
    assert happened == ["events closed", "background ran"]


def _closing_slowly(closing: asyncio.Event, finish_closing: asyncio.Event, happened: list[str]):
    """Two events, whose closing waits (say, to give the upstream response
    back) until `finish_closing` is set, then says so in `happened`."""

    async def events(out: EventStream) -> None:
        try:
            await out.send(b"data: 1\n\n")
            await out.send(b"data: 2\n\n")
        finally:
            closing.set()
            await finish_closing.wait()
            happened.append("closed")

    return events


def test_a_client_leaving_while_the_events_close_does_not_cut_their_closing():
    async def scenario() -> tuple[list[str], BaseException | None]:
        happened: list[str] = []
        closing, finish_closing = asyncio.Event(), asyncio.Event()

        async def send(message: dict) -> None:
            if message.get("body") == b"data: 2\n\n":
                raise OSError("the connection broke")

        async def receive() -> dict:
            await closing.wait()
            asyncio.get_running_loop().call_soon(finish_closing.set)  # after the watch has seen the disconnect
            return {"type": "http.disconnect"}

        stream = EventStream(_closing_slowly(closing, finish_closing, happened))
        try:
            await asyncio.get_running_loop().create_task(stream({"type": "http"}, receive, send))
        except OSError as error:
            return happened, error
        return happened, None

    happened, error = asyncio.run(scenario())
    assert happened == ["closed"]
    assert isinstance(error, OSError)


def test_a_server_shutting_down_mid_stream_cancels_it_though_the_connection_then_drops():
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        happened: list[str] = []
        in_send, closing, finish_closing = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def send(message: dict) -> None:
            if message.get("body") == b"data: 1\n\n":
                in_send.set()
                await asyncio.Event().wait()  # a slow client

        async def receive() -> dict:  # the connection drops while the events close
            await closing.wait()
            loop.call_soon(finish_closing.set)
            return {"type": "http.disconnect"}

        async def background() -> None:
            happened.append("background ran")

        stream = EventStream(_closing_slowly(closing, finish_closing, happened), background=BackgroundTask(background))
        task = loop.create_task(stream({"type": "http"}, receive, send))
        await in_send.wait()
        task.cancel()  # the server shuts down
        with pytest.raises(asyncio.CancelledError):
            await task
        return happened

    assert asyncio.run(scenario()) == ["closed"]


def test_a_client_that_takes_nothing_of_a_send_for_the_send_timeout_is_cut_off():
    """The stream's own sends (a surface's opening and closing events) are
    held by a stalled client for the send timeout at most, to the second:
    then the stream ends unfinished, its producer closed."""

    async def scenario() -> tuple[list[str], list[float]]:
        happened: list[str] = []
        loop = asyncio.get_running_loop()
        held_at: list[float] = []

        async def events(out: EventStream) -> None:
            try:
                await out.send(b"event: opening\n\n")
                happened.append("opened")
            finally:
                happened.append("closed")

        async def send(message: dict) -> None:
            if message.get("body") == b"event: opening\n\n":
                held_at.append(loop.time())
                await asyncio.Event().wait()  # the client's socket is full, and stays so

        async def receive() -> dict:
            await asyncio.Event().wait()  # the client stays
            raise AssertionError("unreachable")

        stream = EventStream(events, ping_seconds=100)
        await asyncio.wait_for(stream({"type": "http", SEND_TIMEOUT: 7.0}, receive, send), 1000)  # virtual seconds
        return happened, [loop.time() - held_at[0]]

    happened, waited = virtual_clock.run(scenario())
    assert happened == ["closed"] and waited == [7.0]


def test_once_cut_a_stream_sends_nothing_more():
    """After the held write that cut it, nothing goes to that client: a
    later event would leave it a stream that looks whole with events
    missing."""

    async def scenario() -> tuple[list[str], list[bytes]]:
        happened: list[str] = []
        sent: list[bytes] = []

        async def events(out: EventStream) -> None:
            held = out.write(b"data: 1\n\n")
            assert held is not None
            with pytest.raises(ClientStalled):
                await held
            happened.append("cut")
            await out.send(b"data: 2\n\n")
            happened.append("sent on")

        async def send(message: dict) -> None:
            if message.get("body") == b"data: 1\n\n":
                await asyncio.Event().wait()  # held until the cut
            sent.append(message.get("body", b""))

        async def receive() -> dict:
            await asyncio.Event().wait()  # the client stays
            raise AssertionError("unreachable")

        stream = EventStream(events, ping_seconds=100)
        await asyncio.wait_for(stream({"type": "http", SEND_TIMEOUT: 7.0}, receive, send), 1000)  # virtual seconds
        return happened, sent

    happened, sent = virtual_clock.run(scenario())
    assert happened == ["cut"] and b"data: 2\n\n" not in sent


def test_a_ping_that_failed_is_raised_at_the_end_and_the_events_still_close():
    async def scenario() -> tuple[list[str], BaseException | None]:
        happened: list[str] = []
        ping_failed = asyncio.Event()

        async def events(out: EventStream) -> None:
            try:
                await out.send(b"data: 1\n\n")
                await asyncio.Event().wait()  # a quiet backend
            finally:
                happened.append("closed")

        async def send(message: dict) -> None:
            if message.get("body") == PING:
                ping_failed.set()
                raise RuntimeError("the ping could not be sent")  # the client, which then leaves

        async def receive() -> dict:
            await ping_failed.wait()
            return {"type": "http.disconnect"}

        stream = EventStream(events, ping_seconds=0.01)
        try:
            await asyncio.get_running_loop().create_task(stream({"type": "http"}, receive, send))
        except RuntimeError as error:
            return list(happened), error  # as the stream ended (asyncio.run would close the events later)
        return list(happened), None

    happened, error = asyncio.run(scenario())
    assert happened == ["closed"]
    assert str(error) == "the ping could not be sent"
