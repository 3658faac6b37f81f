"""A backend stream delimited by the connection's close (HTTP/1.0 style: no
chunked encoding, no Content-Length) that is cut inside an event: the half
event never reaches the client; the stream ends with an error event and
`[DONE]`, as a cut chunked stream does (test_gateway_faults.py). And a
whole answer whose connection closes before its Content-Length: a 502
that says so in words, not in the HTTP client's."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

WHOLE_EVENT = b'data: {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": "Once"}]}\n\n'
HALF_EVENT = b'data: {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "te'


class _CutStream(socketserver.StreamRequestHandler):
    """Reads one request, and closes the connection inside its answer: an
    event stream with no framing (the body ends where the connection
    closes), cut inside an event; or a whole answer, cut before its
    Content-Length."""

    def handle(self) -> None:
        length = 0
        while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if orjson.loads(self.rfile.read(length)).get("stream"):
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            self.wfile.write(WHOLE_EVENT + HALF_EVENT)
        else:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
            self.wfile.write(b'{"id": "chatcmpl-1", "choices": [{"index": 0, "mess')
        self.wfile.flush()


@pytest.fixture(scope="module")
def cut_backend() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _CutStream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def gateway(serve, cut_backend) -> str:
    config = {"models": [{"name": "base", "backend": {"url": cut_backend, "retries": 0}}]}
    return serve(create_app(Config.model_validate(config)))


def test_a_close_delimited_text_stream_cut_mid_event_drops_the_half_event(gateway):
    body = {"model": "base", "prompt": "Once", "stream": True}
    with httpx.stream("POST", f"{gateway}/v1/completions", json=body, timeout=10) as response:
        assert response.status_code == 200
        text = response.read().decode()
    events = text.split("\n\n")
    assert events[-1] == "" and all(event.startswith("data: ") for event in events[:-1]), text
    payloads = [event.removeprefix("data: ") for event in events[:-1]]
    assert len(payloads) == 3, text
    assert orjson.loads(payloads[0])["choices"][0]["text"] == "Once"
    error = orjson.loads(payloads[1])["error"]
    assert error["type"] == "upstream_error" and "'base'" in error["message"]
    assert "ended the stream early" in error["message"]
    assert payloads[2] == "[DONE]"


def test_a_whole_answer_cut_before_its_length_is_a_502_said_in_words(gateway):
    body = {"model": "base", "messages": [{"role": "user", "content": "Hi"}]}
    response = httpx.post(f"{gateway}/v1/chat/completions", json=body, timeout=10)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "upstream_error" and error["code"] == "upstream_unreachable"
    assert (
        error["message"]
        == "the backend for model 'base' connection failed: the connection closed before the answer's end"
    )
