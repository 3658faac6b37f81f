"""Limits: request body size, requests in flight, and the per-stream cap
on text the parsers hold back."""

from __future__ import annotations

import gzip

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Hi"}]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    _, fake_url = fake_backend_server
    config = {
        "server": {"max_body_bytes": 2000, "max_concurrent_requests": 1, "max_buffered_chars": 100},
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            },
            {
                "name": "guided",
                "backend": {"url": f"{fake_url}/v1"},
                "tool_call_parser": "qwen25",
                "guided_decoding": "vllm",
            },
        ],
    }
    return serve(create_app(Config.model_validate(config)))


def test_a_body_over_the_limit_is_413(gateway, fake):
    big = [{"role": "user", "content": "x" * 3000}]
    chunked = (
        part for part in [b'{"model": "qwen3", "messages": ', httpx.Request("POST", "/", json=big).content, b"}"]
    )
    for response in (
        httpx.post(f"{gateway}/v1/chat/completions", json={"model": "qwen3", "messages": big}),
        httpx.post(f"{gateway}/v1/chat/completions", content=chunked),  # no Content-Length
    ):
        assert response.status_code == 413, response.text
        assert response.json()["error"]["code"] == "request_too_large"
    assert fake.requests == []
    assert (
        httpx.post(f"{gateway}/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}).status_code == 200
    )


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/completions"])
def test_a_compressed_body_is_415_in_the_surfaces_shape(gateway, fake, path):
    body = {"model": "qwen3", "messages": MESSAGES, "input": "Hi", "prompt": "Hi", "max_tokens": 5}
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    response = httpx.post(f"{gateway}{path}", content=gzip.compress(orjson.dumps(body)), headers=headers)
    assert response.status_code == 415, response.text
    error = response.json()["error"]
    message = "Content-Encoding 'gzip' is not supported: send the body uncompressed"
    if path == "/v1/messages":
        assert error == {"type": "invalid_request_error", "message": message}
    else:
        assert error["message"] == message and error["code"] == "unsupported_content_encoding"
    assert fake.requests == []


def test_a_text_completion_over_the_limit_is_413(gateway, fake):
    response = httpx.post(f"{gateway}/v1/completions", json={"model": "qwen3", "prompt": "x" * 3000})
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "request_too_large"
    assert fake.requests == []


def test_past_the_concurrency_limit_clients_get_429_with_retry_after(gateway, fake):
    fake.hold_after = 1
    body = {"model": "qwen3", "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=gateway, timeout=10) as client:
        with client.stream("POST", "/v1/chat/completions", json=body) as streaming:
            lines = streaming.iter_lines()
            assert next(lines).startswith("data: ")
            refused = client.post(
                "/v1/chat/completions",
                json={"model": "qwen3", "messages": MESSAGES},
                headers={"x-request-id": "refused-1"},
            )
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "too_many_requests"
            assert refused.headers["x-request-id"] == "refused-1"
            assert client.get("/health").status_code == 200
            scrape = client.get("/metrics")
            assert scrape.status_code == 200
            refused_line = 'parsegate_requests_total{model="unknown",route="/v1/chat/completions",status="429"} 1.0'
            assert refused_line in scrape.text.splitlines()
            fake.release()
            assert [line for line in lines if line.startswith("data: ")][-1] == "data: [DONE]"
        assert client.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}).status_code == 200


def test_past_the_concurrency_limit_messages_clients_get_an_anthropic_429(gateway, fake):
    fake.hold_after = 1
    body = {"model": "qwen3", "messages": MESSAGES, "stream": True}
    with (
        httpx.Client(base_url=gateway, timeout=10) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as streaming,
    ):
        lines = streaming.iter_lines()
        assert next(lines).startswith("data: ")
        refused = client.post("/v1/messages", json={"model": "qwen3", "max_tokens": 9, "messages": MESSAGES})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        message = "more than 1 requests in flight; retry later"
        assert refused.json() == {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
        fake.release()
        assert [line for line in lines if line.startswith("data: ")][-1] == "data: [DONE]"


def test_a_call_not_recognised_within_the_buffer_cap_streams_as_content(gateway, fake):
    text = '<tool_call>{"arguments": {"x": "' + "y" * 300 + '"}, "name": "f"}</tool_call>'
    fake.script("<think>hm</think>" + text, chunk_size=8)
    client = openai_client(gateway)
    chunks = list(client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True))
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert "".join(delta.content or "" for delta in deltas) == text
    assert not any(delta.tool_calls for delta in deltas)
    content_chunks = [delta.content for delta in deltas if delta.content]
    assert len(content_chunks) > 10  # it streamed; it was not held back to the end


def test_a_call_array_unnamed_within_the_buffer_cap_streams_as_content(gateway, fake):
    """tool_choice "required" under guided_decoding: the reply is read as a
    JSON array of calls, and the same cap applies."""
    text = '[{"arguments": {"x": "' + "y" * 300 + '"}, "name": "f"}]'
    fake.script(text, chunk_size=8)
    client = openai_client(gateway)
    chunks = list(
        client.chat.completions.create(
            model="guided", messages=MESSAGES, tools=TOOLS, tool_choice="required", stream=True
        )
    )
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert "".join(delta.content or "" for delta in deltas) == text
    assert not any(delta.tool_calls for delta in deltas)
    assert len([delta.content for delta in deltas if delta.content]) > 10
