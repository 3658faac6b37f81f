"""Upstream faults, each with its defined outcome, on real loopback servers:
timeouts (connect, first byte, between chunks), malformed streams, a
backend cut mid-stream, and a client that goes away."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import FakeBackend

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

MESSAGES = [{"role": "user", "content": "Hi"}]
SHORT = 0.3  # seconds: the configured timeouts of the impatient models


@pytest.fixture(scope="module")
def full_listener() -> Iterator[int]:
    """A port that listens but never accepts, its queue already full, so a
    new connection hangs in the handshake (a connect timeout)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        fillers = []
        for _ in range(2):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        yield port
        for filler in fillers:
            filler.close()


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, full_listener) -> str:
    _, fake_url = fake_backend_server
    impatient = {"first_byte_timeout": SHORT, "idle_timeout": SHORT}
    config = {
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{fake_url}/v1", **impatient},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            },
            {"name": "stuck", "backend": {"url": f"http://127.0.0.1:{full_listener}/v1", "connect_timeout": SHORT}},
        ]
    }
    return serve(create_app(Config.model_validate(config)))


@pytest.fixture
def http(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=10) as client:
        yield client


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


def stream_events(http: httpx.Client, model: str = "qwen3") -> list[str]:
    body = {"model": model, "messages": MESSAGES, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200, response.read()
        return [line[6:] for line in response.iter_lines() if line.startswith("data: ")]


def parsed(events: list[str]) -> tuple[str, str, dict]:
    """(reasoning, content, final error) of a stream that ended in an error event."""
    assert events[-1] == "[DONE]"
    error = orjson.loads(events[-2])["error"]
    deltas = [orjson.loads(event)["choices"][0]["delta"] for event in events[:-2]]
    reasoning = "".join(delta.get("reasoning_content") or "" for delta in deltas)
    content = "".join(delta.get("content") or "" for delta in deltas)
    return reasoning, content, error


def test_connect_timeout_is_504(http):
    error = error_of(http.post("/v1/chat/completions", json={"model": "stuck", "messages": MESSAGES}), 504)
    assert error["code"] == "upstream_timeout" and "'stuck'" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_first_byte_timeout_is_504(http, fake, stream):
    fake.hold_headers = True
    body = {"model": "qwen3", "messages": MESSAGES, "stream": stream}
    error = error_of(http.post("/v1/chat/completions", json=body), 504)
    assert error["code"] == "upstream_timeout" and "sent no response for 0.3 s" in error["message"]


def test_idle_timeout_mid_stream_keeps_the_text_then_errors(http, fake):
    fake.script("<think>\nweighing it</think>The answer", chunk_size=6)
    fake.hold_after = 6  # the role event, then five pieces of text: up to "k>The "
    reasoning, content, error = parsed(stream_events(http))
    assert reasoning == "\nweighing it" and content == "The"
    assert error["code"] == "upstream_timeout" and "stopped sending for 0.3 s" in error["message"]


def test_idle_timeout_mid_text_completion_stream_errors(http, fake):
    fake.script("Once upon a time", chunk_size=4)
    fake.hold_after = 2
    body = {"model": "qwen3", "prompt": "Tell me a story", "stream": True}
    with http.stream("POST", "/v1/completions", json=body) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert [orjson.loads(event)["choices"][0]["text"] for event in events[:2]] == ["Once", " upo"]
    error = orjson.loads(events[2])["error"]
    assert error["code"] == "upstream_timeout" and "stopped sending for 0.3 s" in error["message"]
    assert events[3:] == ["[DONE]"]


def test_backend_dropping_the_connection_flushes_what_was_parsed(http, fake):
    fake.script("<think>\nStill thinking about it", chunk_size=5)
    fake.drop_after = 4  # the role event, then "<thin", "k>\nSt", "ill t"
    reasoning, _, error = parsed(stream_events(http))
    assert reasoning == "\nStill t"
    assert len(fake.requests) == 1  # once the stream has started, nothing is retried
    assert error["type"] == "upstream_error" and "'qwen3'" in error["message"]


def test_malformed_sse_chunk_ends_the_stream_with_an_error_event(http, fake):
    good = {"choices": [{"index": 0, "delta": {"content": "</think>Partial"}, "finish_reason": None}]}
    fake.raw_stream = [b"data: " + orjson.dumps(good) + b"\n\n", b"data: {broken\n\n", b"data: [DONE]\n\n"]
    _, content, error = parsed(stream_events(http))
    assert content == "Partial"
    assert error["code"] == "upstream_malformed" and "malformed chunk" in error["message"]


def test_a_chunk_split_over_two_data_lines_is_one_chunk(http, fake):
    """A valid event whose JSON value spans two `data:` lines (the lines of
    one event join with a line feed, as the SSE standard says)."""
    first = {"choices": [{"index": 0, "delta": {"content": "</think>Split"}, "finish_reason": None}]}
    last = {"choices": [{"index": 0, "delta": {"content": " event"}, "finish_reason": "stop"}]}
    split = orjson.dumps(first, option=orjson.OPT_INDENT_2).split(b"\n")
    fake.raw_stream = [
        b"".join(b"data: " + line + b"\n" for line in split) + b"\n",
        b"data: " + orjson.dumps(last) + b"\n\n",
        b"data: [DONE]\n\n",
    ]
    events = stream_events(http)
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(event) for event in events[:-1]]
    assert all("error" not in chunk for chunk in chunks)
    assert "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks) == "Split event"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    "choices",
    [
        [5],
        7,
        {"index": 0},
        [{"index": "0", "delta": {"content": "more"}}],
        [{"index": None, "delta": {}}],
        [{"index": 0, "delta": {"content": 5}}],
    ],
    ids=[
        "a choice not an object",
        "choices not a list",
        "choices an object",
        "index a string",
        "index null",
        "content a number",
    ],
)
def test_chunk_with_malformed_choices_ends_the_stream_with_an_error_event(http, fake, choices):
    good = {"choices": [{"index": 0, "delta": {"content": "</think>Partial"}, "finish_reason": None}]}
    bad = {"choices": choices}
    fake.raw_stream = [b"data: " + orjson.dumps(good) + b"\n\n", b"data: " + orjson.dumps(bad) + b"\n\n"]
    fake.raw_stream.append(b"data: [DONE]\n\n")
    _, content, error = parsed(stream_events(http))
    assert content == "Partial"
    assert error["code"] == "upstream_malformed" and "malformed chunk" in error["message"]


def test_stream_that_is_not_sse_is_an_error_event(http, fake):
    fake.raw_stream = [b"<html>502 Bad Gateway</html>"]
    _, content, error = parsed(stream_events(http))
    assert content == "" and "ended the stream early" in error["message"]


STALLED_TEXT = 48 << 20  # characters a stalled client's stream would carry


@contextlib.contextmanager
def stalled_client(gateway: str, fake: FakeBackend) -> Iterator[Iterator[bytes]]:
    """A chat stream of `STALLED_TEXT` characters to a client with a small
    receive window, which reads its first piece and then nothing: what is
    left of its body, for reading on."""
    fake.script("x" * STALLED_TEXT, chunk_size=16384)
    small_window = httpx.HTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)])
    body = {"model": "qwen3", "messages": MESSAGES, "stream": True}
    with (
        httpx.Client(transport=small_window, base_url=gateway, timeout=30) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        raw = response.iter_raw(1024)
        next(raw)
        yield raw


def test_a_client_that_stops_reading_stops_the_backend(gateway, fake):
    """Backpressure: the gateway reads upstream only as fast as the client
    reads, so a stalled client leaves the backend blocked far from the end."""
    with stalled_client(gateway, fake):
        wait_until_steady(lambda: fake.sent_bytes)
        assert 0 < fake.sent_bytes < STALLED_TEXT // 2


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_client_that_stalls_then_reads_on_gets_the_whole_text_in_order(gateway, fake, path):
    """While the client is stalled the gateway's writes are held (24 MB is
    far more than the sockets toward the client hold) and it stops reading
    the backend; when the client reads on, what the backend sent meanwhile
    follows in order, and the stream ends as usual. (Whether the backend
    itself is held back is the test above's: here the kernel's receive
    buffer, up to 32 MB on Linux by default, may take all of it.)"""
    text = "".join(f"{number:07d}," for number in range(3 << 20))  # 24 MB, every piece distinct
    fake.script("</think>" + text, chunk_size=16384)
    small_window = httpx.HTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)])
    body = {"model": "qwen3", "stream": True, "max_tokens": 64}
    body.update({"input": "Hi"} if path == "/v1/responses" else {"messages": MESSAGES})
    with (
        httpx.Client(transport=small_window, base_url=gateway, timeout=30) as client,
        client.stream("POST", path, json=body) as response,
    ):
        assert response.status_code == 200, response.read()
        lines = response.iter_lines()
        next(lines)
        wait_until_steady(lambda: fake.sent_bytes)
        payloads = [orjson.loads(line[6:]) for line in lines if line.startswith("data: {")]
    if path == "/v1/chat/completions":
        received = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in payloads if chunk["choices"])
        assert payloads[-1]["choices"][0]["finish_reason"] == "stop"
    else:
        received = "".join(
            event.get("delta") or "" for event in payloads if event["type"] == "response.output_text.delta"
        )
        received += "".join(
            (event.get("delta") or {}).get("text") or "" for event in payloads if event["type"] == "content_block_delta"
        )
        assert payloads[-1]["type"] in ("message_stop", "response.completed")
    assert received == text


def test_a_client_that_reads_nothing_for_the_send_timeout_is_cut_off(serve, fake_backend_server, fake, caplog):
    """A client that stays connected and reads nothing holds the backend's
    stream and a concurrency slot only for `server.send_timeout`: then its
    stream is cut, the next request is served, and the stalled client, when
    it reads on, finds its response cut short. The gateway's warning says
    why; uvicorn's error line for an unfinished response is left out."""
    _, fake_url = fake_backend_server
    config = {
        "server": {"send_timeout": 0.5, "max_concurrent_requests": 1},
        "models": [{"name": "qwen3", "backend": {"url": f"{fake_url}/v1"}, "reasoning_parser": "qwen3"}],
    }
    gateway = serve(create_app(Config.model_validate(config)))
    server_errors = Recorded()  # after the server's start, which sets uvicorn's loggers up
    logging.getLogger("uvicorn.error").addHandler(server_errors)
    with removed_after(server_errors), stalled_client(gateway, fake) as raw:
        # The gateway closes the backend's connection: the backend, held
        # until then, writes the rest of its stream (events framing all of
        # the text) into the void.
        wait_until(lambda: fake.sent_bytes > STALLED_TEXT)
        fake.script("Hello")
        answer = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}, timeout=10)
        assert answer.status_code == 200, answer.text  # its slot is free
        metrics = httpx.get(f"{gateway}/metrics", timeout=10).text
        assert 'parsegate_streams_cut_total{model="qwen3",reason="client_stalled"} 1.0' in metrics
        with pytest.raises(httpx.RemoteProtocolError):
            for _ in raw:  # what the sockets held, then the end of a connection closed mid-body
                pass
    assert "the stream is cut" in caplog.text and server_errors.messages == []


@contextlib.contextmanager
def removed_after(handler: logging.Handler) -> Iterator[None]:
    try:
        yield
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)


class Recorded(logging.Handler):
    """The messages of the records that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def wait_until(condition) -> None:
    """Poll `condition` until it holds, for at most 20 s."""
    pause = threading.Event()
    for _ in range(200):
        if condition():
            return
        pause.wait(0.1)
    raise AssertionError("the condition never held")


def wait_until_steady(value, polls: int = 3) -> None:
    """Poll `value` until it stops changing (the backend is blocked), for at most 20 s."""
    pause, last, steady = threading.Event(), None, 0
    for _ in range(200):
        current = value()
        steady = steady + 1 if current == last else 0
        if steady == polls:
            return
        last = current
        pause.wait(0.1)
    raise AssertionError("the value never settled")


def test_client_disconnect_cancels_the_upstream_request(gateway, fake):
    fake.script("Thinking of a long answer", chunk_size=4)
    fake.hold_after = 3
    body = {"model": "qwen3", "messages": MESSAGES, "stream": True}
    with (
        httpx.Client(base_url=gateway, timeout=10) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert next(response.iter_lines()).startswith("data: ")
        assert fake.held.wait(timeout=5)
    assert fake.stream_abandoned.wait(timeout=1.0)


@pytest.fixture(scope="module")
def second_fake(serve) -> tuple[FakeBackend, str]:
    backend = FakeBackend()
    return backend, serve(backend.app)


@pytest.fixture
def other(second_fake) -> FakeBackend:
    backend, _ = second_fake
    backend.reset()
    return backend


def spread_gateway(serve, urls: list[str], **backend: object) -> str:
    """A gateway taking `urls` in turn (session routing: test_session_routing.py)."""
    config = {"models": [{"name": "spread", "backend": {"urls": urls, "routing": "round_robin", **backend}}]}
    return serve(create_app(Config.model_validate(config)))


def ask(base_url: str, model: str = "spread") -> httpx.Response:
    return httpx.post(f"{base_url}/v1/chat/completions", json={"model": model, "messages": MESSAGES}, timeout=10)


def test_requests_spread_round_robin_over_the_urls(serve, fake_backend_server, second_fake, fake, other):
    gateway = spread_gateway(serve, [f"{fake_backend_server[1]}/v1", f"{second_fake[1]}/v1"])
    for _ in range(4):
        assert ask(gateway).status_code == 200
    assert (len(fake.requests), len(other.requests)) == (2, 2)


def test_a_failing_url_is_retried_elsewhere_then_skipped(
    serve, fake_backend_server, second_fake, fake, other, closed_port
):
    fake.error = (503, b"overloaded")
    urls = [f"{fake_backend_server[1]}/v1", f"http://127.0.0.1:{closed_port}/v1", f"{second_fake[1]}/v1"]
    gateway = spread_gateway(serve, urls, retries=2, breaker_failures=2, breaker_cooldown=600)
    for _ in range(6):
        response = ask(gateway)
        assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "Hello!"
    assert len(fake.requests) == 2  # failed twice in a row, then skipped
    assert len(other.requests) == 6


def test_retries_end_with_the_last_error(serve, fake_backend_server, fake):
    fake.error = (503, b"overloaded")
    gateway = spread_gateway(serve, [f"{fake_backend_server[1]}/v1"], retries=1)
    response = ask(gateway)
    assert response.status_code == 503 and response.json()["error"]["message"] == "overloaded"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(("status", "answered"), [(400, 400), (500, 502), (504, 504)])
def test_other_statuses_are_not_retried(serve, fake_backend_server, fake, status, answered):
    fake.error = (status, b"no")
    gateway = spread_gateway(serve, [f"{fake_backend_server[1]}/v1"], retries=3)
    assert ask(gateway).status_code == answered  # a backend's 500 is answered 502 (upstream/errors.py)
    assert len(fake.requests) == 1


def test_a_url_that_times_out_is_skipped_too(serve, fake_backend_server, second_fake, fake, other):
    fake.hold_headers = True
    urls = [f"{fake_backend_server[1]}/v1", f"{second_fake[1]}/v1"]
    gateway = spread_gateway(serve, urls, first_byte_timeout=SHORT, breaker_failures=1, breaker_cooldown=600)
    assert [ask(gateway).status_code for _ in range(3)] == [504, 200, 200]
    assert len(fake.requests) == 1 and len(other.requests) == 2


def text_completion_events(http: httpx.Client) -> list[str]:
    body = {"model": "qwen3", "prompt": "Tell me a story", "stream": True}
    with http.stream("POST", "/v1/completions", json=body) as response:
        assert response.status_code == 200
        text = response.read().decode()
    assert text.endswith("\n\n") and all(block.startswith("data: ") for block in text[:-2].split("\n\n")), text
    return [block[6:] for block in text[:-2].split("\n\n")]


def test_a_text_completion_stream_cut_short_ends_with_an_error_event(http, fake):
    fake.script("Once upon a time", chunk_size=4)
    fake.cut = True
    events = text_completion_events(http)
    assert "".join(orjson.loads(event)["choices"][0]["text"] for event in events[:-2]) == "Once upon a time"
    error = orjson.loads(events[-2])["error"]
    assert error["type"] == "upstream_error" and "ended the stream early" in error["message"]
    assert events[-1] == "[DONE]"


def test_a_text_completion_stream_reset_mid_line_is_never_glued_to_the_error(http, fake):
    whole = b'data: {"choices": [{"index": 0, "text": "Once"}]}\n\n'
    fake.raw_stream = [whole, b'data: {"choices": [{"index": 0, "te', b"never sent"]
    fake.drop_after = 2
    events = text_completion_events(http)
    assert orjson.loads(events[0])["choices"][0]["text"] == "Once"
    assert orjson.loads(events[1])["error"]["type"] == "upstream_error"
    assert events[2:] == ["[DONE]"]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_client_leaving_before_the_first_byte_cancels_the_upstream_request(gateway_url, fake, path, stream):
    """The backend holds its headers; the model's first-byte timeout is
    600 s. A client that gives up (closes its connection once the request
    is upstream) ends the upstream request within a second."""
    fake.hold_headers = True
    body = orjson.dumps({"model": "qwen3", "messages": MESSAGES, "prompt": "Hi", "stream": stream})
    url = httpx.URL(gateway_url)
    head = f"POST {path} HTTP/1.1\r\nHost: {url.host}\r\nContent-Type: application/json\r\n"
    with socket.create_connection((url.host, url.port)) as connection:
        connection.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert fake.held.wait(5)
    assert fake.stream_abandoned.wait(timeout=1.0)
