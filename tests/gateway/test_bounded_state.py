"""What a misbehaving client or backend can make the gateway hold is
bounded: metric series under a catch-all entry, the part of a backend's
error body that is read, the length of one event line, and a whole
answer's decoded size."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.metrics import MAX_ROUTED_MODELS, OTHER_MODELS
from gateway.upstream.sse_reader import MAX_LINE_BYTES, EventLines, LineTooLong
from tests.cpu_cost import least_costs, thread_cpu_seconds
from tests.gateway.test_gateway_faults import wait_until_steady
from tests.scripted_backend import ScriptedBackend

MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def catch_all(serve, fake_backend_server) -> str:
    config = {"models": [{"name": "*", "backend": {"url": f"{fake_backend_server[1]}/v1"}}]}
    return serve(create_app(Config.model_validate(config)))


def model_labels(metrics: str, family: str) -> set[str]:
    return {
        line.split('model="', 1)[1].split('"', 1)[0]
        for line in metrics.splitlines()
        if line.startswith(family + "{") and 'model="' in line
    }


def test_a_catch_all_makes_at_most_max_routed_models_labels(catch_all, fake):
    with httpx.Client(base_url=catch_all, timeout=10) as http:
        for number in range(MAX_ROUTED_MODELS + 30):
            body = {"model": f"client-made-{number}", "messages": MESSAGES}
            assert http.post("/v1/chat/completions", json=body).status_code == 200
        metrics = http.get("/metrics").text
    labels = model_labels(metrics, "parsegate_requests_total")
    assert len(labels) == MAX_ROUTED_MODELS + 1 and OTHER_MODELS in labels
    assert "client-made-0" in labels and f"client-made-{MAX_ROUTED_MODELS}" not in labels
    assert (
        f'parsegate_requests_total{{model="{OTHER_MODELS}",route="/v1/chat/completions",status="200"}} 30.0' in metrics
    )


def test_only_the_start_of_a_huge_error_body_is_read(catch_all, fake):
    total = 64 << 20
    fake.error_stream = (400, total)
    response = httpx.post(f"{catch_all}/v1/chat/completions", json={"model": "m", "messages": MESSAGES}, timeout=30)
    assert response.status_code == 400 and response.json()["error"]["message"] == "x" * 500
    wait_until_steady(lambda: fake.sent_bytes)
    assert fake.sent_bytes < total // 4


def test_an_event_line_over_the_cap_fails_the_stream_cleanly(catch_all, fake):
    good = {"choices": [{"index": 0, "delta": {"content": "Partial"}, "finish_reason": None}]}
    huge = b"data: " + b"x" * (MAX_LINE_BYTES + 1)
    fake.raw_stream = [
        b"data: " + orjson.dumps(good) + b"\n\n",
        *(huge[i : i + 65536] for i in range(0, len(huge), 65536)),
    ]
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", f"{catch_all}/v1/chat/completions", json=body, timeout=30) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert orjson.loads(events[0])["choices"][0]["delta"]["content"] == "Partial"
    error = orjson.loads(events[-2])["error"]
    assert error["code"] == "upstream_malformed" and "event line over" in error["message"]
    assert events[-1] == "[DONE]"


ANSWER_LIMIT = 1 << 20  # the bounded model's backend.max_answer_bytes


@pytest.fixture(scope="module")
def bounded(serve, fake_backend_server) -> str:
    backend = {"url": f"{fake_backend_server[1]}/v1", "max_answer_bytes": ANSWER_LIMIT}
    return serve(create_app(Config.model_validate({"models": [{"name": "bounded", "backend": backend}]})))


def too_large(response: httpx.Response) -> None:
    assert response.status_code == 502, response.text[:200]
    error = response.json()["error"]
    assert error["code"] == "upstream_too_large" and error["type"] == "upstream_error"
    assert error["message"] == (
        f"the backend for model 'bounded' sent an answer over {ANSWER_LIMIT} bytes "
        "(its backend.max_answer_bytes); the rest was not read"
    )


@pytest.mark.usefixtures("both_paths")
def test_a_gzip_answer_over_max_answer_bytes_decoded_is_a_502_naming_the_limit(bounded, fake):
    """4 MiB of text comes as a few KB of gzip: the limit counts the
    decoded bytes, which are what the gateway would hold."""
    fake.script("x" * (4 << 20))
    fake.gzip = True
    too_large(httpx.post(f"{bounded}/v1/chat/completions", json={"model": "bounded", "messages": MESSAGES}, timeout=30))


@pytest.mark.usefixtures("both_paths")
def test_a_whole_answer_over_max_answer_bytes_is_a_502_and_the_rest_is_not_read(bounded, fake):
    total = 64 << 20
    fake.padding = total  # a valid answer, 64 MiB long
    too_large(httpx.post(f"{bounded}/v1/chat/completions", json={"model": "bounded", "messages": MESSAGES}, timeout=30))
    assert fake.stream_abandoned.wait(timeout=10)  # the gateway closed the connection
    assert fake.sent_bytes < total // 4


@pytest.mark.usefixtures("both_paths")
def test_a_whole_answer_at_max_answer_bytes_is_answered(bounded, fake):
    text = "y" * (ANSWER_LIMIT - 4096)
    fake.script(text)
    answer = httpx.post(f"{bounded}/v1/chat/completions", json={"model": "bounded", "messages": MESSAGES}, timeout=30)
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == text


@pytest.mark.usefixtures("both_paths")
def test_a_text_completion_over_max_answer_bytes_is_a_502(bounded, fake):
    fake.script("z" * (2 << 20))
    body = {"model": "bounded", "prompt": "Tell me a story"}
    too_large(httpx.post(f"{bounded}/v1/completions", json=body, timeout=30))


def test_props_over_max_answer_bytes_is_a_502_naming_the_limit(serve):
    """`GET /props` (template mode's `chat_template: backend`) is read
    under the same bound as an answer, as every `fetch` is."""
    scripted = ScriptedBackend()
    scripted.routes["/props"] = (200, {"chat_template": "{{ messages }}" + " " * (2 << 20), "bos_token": ""})
    backend = {"url": f"{scripted.url}/v1", "server": "llamacpp", "max_answer_bytes": ANSWER_LIMIT}
    model = {"name": "bounded", "backend": backend, "chat_template": "backend", "reasoning_parser": "none"}
    gateway = serve(create_app(Config.model_validate({"models": [{**model, "tool_call_parser": "none"}]})))
    response = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "bounded", "messages": MESSAGES}, timeout=30)
    too_large(response)  # said as it is, as an unreachable or timed-out /props is
    assert scripted.asked("/props") == 1


def _payloads(pieces) -> list[bytes]:
    lines = EventLines()
    return [payload for piece in pieces for payload in lines.feed(piece)]


def test_a_long_line_in_small_pieces_costs_linear_time():
    """A line in 256-byte pieces: joining the held piece to each new one
    copies the line once per piece (2 MB: 8 GB, 64 times what 256 KB
    costs); holding the pieces in a list copies it once (8 times)."""

    def cost(kilobytes: int) -> float:
        line = b"data: " + b"y" * (kilobytes << 10)
        pieces = [line[i : i + 256] for i in range(0, len(line), 256)] + [b"\n\n"]
        payloads: list[list[bytes]] = []
        spent = thread_cpu_seconds(lambda: payloads.append(_payloads(pieces)))
        assert payloads == [[line[6:]]]
        return spent

    small, large = least_costs(lambda: cost(256), lambda: cost(2048), bound=16, max_runs=6)
    assert large < 16 * small, f"256 KB: {small:.4f}s, 2 MB: {large:.4f}s"


def test_a_line_past_the_cap_stops_the_reading():
    pieces = iter([b"data: "] + [b"z" * 65536] * ((MAX_LINE_BYTES >> 16) + 2) + [b"never read"])
    with pytest.raises(LineTooLong):
        _payloads(pieces)
    assert list(pieces)[-1:] == [b"never read"]  # the reading stopped at the cap
