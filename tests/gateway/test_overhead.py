"""parsegate's own time in a request: `parsegate_overhead_seconds` (the
request's wall time less its wait for the backend) and the opt-in
`X-Parsegate-Overhead-Ms` header, against a backend that takes its time."""

from __future__ import annotations

import time

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_metrics import scrape, value

BODY = {"model": "qwen3", "messages": [{"role": "user", "content": "Hi"}]}
REPLY = "<think>\nA greeting.\n</think>\n\nHello there, how are you today?"
HEADERS_AFTER = 0.3  # seconds the backend takes to answer
PACE = 0.03  # seconds before each of its streamed events


@pytest.fixture
def gateway(serve, gateway_config, fake) -> str:
    """A gateway of its own (its counts start at zero) with the header on,
    before a backend that takes `HEADERS_AFTER` to answer."""
    fake.script(REPLY)
    fake.delay = HEADERS_AFTER
    return serve(create_app(Config.model_validate({**gateway_config, "server": {"overhead_header": True}})))


def overhead(gateway: str) -> tuple[float, float]:
    """The overhead histogram's (count, sum) for the model."""
    samples = scrape(gateway)
    return (
        value(samples, "parsegate_overhead_seconds_count", model="qwen3"),
        value(samples, "parsegate_overhead_seconds_sum", model="qwen3"),
    )


def test_a_whole_answer_counts_its_overhead_without_the_backends_time(gateway):
    started = time.perf_counter()
    response = httpx.post(f"{gateway}/v1/chat/completions", json=BODY, timeout=30)
    took = time.perf_counter() - started
    assert response.status_code == 200 and took >= HEADERS_AFTER

    count, seconds = overhead(gateway)
    assert count == 1
    assert 0 < seconds < HEADERS_AFTER / 2  # the backend's time is not parsegate's
    header_ms = float(response.headers["x-parsegate-overhead-ms"])
    assert 0 < header_ms <= seconds * 1000 + 0.001  # the figure up to the headers, the rest of it after


def test_a_stream_counts_its_overhead_without_the_backends_pauses(gateway, fake):
    fake.pace = PACE
    events = 2 + -(-len(REPLY) // 4) + 1  # role, text, finish, [DONE]
    started = time.perf_counter()
    with httpx.stream("POST", f"{gateway}/v1/chat/completions", json={**BODY, "stream": True}, timeout=30) as response:
        header_ms = float(response.headers["x-parsegate-overhead-ms"])
        lines = list(response.iter_lines())
    took = time.perf_counter() - started
    assert lines[-2] == "data: [DONE]" and took >= HEADERS_AFTER + events * PACE

    count, seconds = overhead(gateway)
    assert count == 1
    assert 0 < seconds < (HEADERS_AFTER + events * PACE) / 2
    assert 0 < header_ms <= seconds * 1000 + 0.001  # sent before the body: the time up to the headers


def test_the_header_is_off_by_default_and_the_histogram_is_not(gateway_url, fake):
    fake.script(REPLY)
    response = httpx.post(f"{gateway_url}/v1/chat/completions", json=BODY, timeout=30)
    assert response.status_code == 200 and "x-parsegate-overhead-ms" not in response.headers
    assert overhead(gateway_url)[0] >= 1


def test_routes_that_serve_no_model_count_no_overhead(gateway):
    assert httpx.get(f"{gateway}/health").status_code == 200
    assert httpx.get(f"{gateway}/v1/models").status_code == 200
    assert "parsegate_overhead_seconds_count" not in httpx.get(f"{gateway}/metrics").text
