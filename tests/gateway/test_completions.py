"""`POST /v1/completions` (text completions) through the real gateway with the
official client: forwarded unparsed, streamed and not, with chat's routing
and errors."""

from __future__ import annotations

import math

import httpx
import openai
import pytest

from tests.fake_backend import BACKEND_KEY, USAGE
from tests.gateway.test_gateway_errors import error_of

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

RAW = "<think>\nkept as written\n</think>\n\nOnce upon a time"


def test_text_completion_passes_through_unparsed(client, fake):
    fake.script(RAW)
    reply = client.completions.create(model="qwen3", prompt="Tell me a story", max_tokens=16, extra_body={"top_k": 3})
    assert reply.choices[0].text == RAW and reply.choices[0].finish_reason == "stop"
    assert reply.usage.model_dump() == {**USAGE, "completion_tokens_details": None, "prompt_tokens_details": None}
    headers, body = fake.requests[-1]
    assert body == {"model": "fake-qwen3", "prompt": "Tell me a story", "max_tokens": 16, "top_k": 3}
    assert headers["authorization"] == f"Bearer {BACKEND_KEY}"


def test_streamed_text_completion_arrives_piece_by_piece(client, fake):
    fake.script(RAW, chunk_size=5)
    chunks = list(client.completions.create(model="qwen3", prompt="Tell me a story", stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks) == RAW
    assert len(chunks) == math.ceil(len(RAW) / 5) + 1  # every piece, then the finish chunk
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert fake.last_body["stream"] is True


def test_a_compressed_stream_reaches_the_client_decoded(client, fake):
    fake.script(RAW, chunk_size=5)
    fake.gzip = True
    chunks = list(client.completions.create(model="qwen3", prompt="Tell me a story", stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks) == RAW
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_backend_is_asked_for_uncompressed_streams(client, fake):
    """A compressing backend (or a proxy before it) would hold the events
    back until its buffer filled."""
    fake.script(RAW, chunk_size=5)
    list(client.chat.completions.create(model="qwen3", messages=[{"role": "user", "content": "Hi"}], stream=True))
    list(client.completions.create(model="qwen3", prompt="Tell me a story", stream=True))
    assert [headers["accept-encoding"] for headers, _ in fake.requests[-2:]] == ["identity", "identity"]


def test_extra_body_is_merged_into_text_completions(client, fake):
    client.completions.create(model="qwen3-thinking-on", prompt="Hi", extra_body={"top_k": 1})
    assert fake.last_body["top_k"] == 1 and fake.last_body["chat_template_kwargs"]["custom"] == "x"


def test_unknown_model_is_404(client, fake):
    with pytest.raises(openai.NotFoundError) as error:
        client.completions.create(model="nope", prompt="Hi")
    assert error.value.body["code"] == "model_not_found" and fake.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_backend_down_is_502(gateway_url, stream):
    response = httpx.post(f"{gateway_url}/v1/completions", json={"model": "down", "prompt": "Hi", "stream": stream})
    assert error_of(response, 502)["code"] == "upstream_unreachable"


def test_backend_error_passes_through(client, fake):
    fake.error = (
        400,
        b'{"error": {"message": "prompt too long", "type": "BadRequestError", "param": "prompt", "code": 400}}',
    )
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model="qwen3", prompt="Hi")
    assert error.value.body == {
        "message": "prompt too long",
        "type": "BadRequestError",
        "param": "prompt",
        "code": "400",
    }


@pytest.mark.parametrize(("body", "param"), [(b"{}", "model"), (b'{"model": "qwen3", "stream": "yes"}', "stream")])
def test_malformed_requests_are_400(gateway_url, fake, body, param):
    assert error_of(httpx.post(f"{gateway_url}/v1/completions", content=body), 400)["param"] == param
    assert fake.requests == []
