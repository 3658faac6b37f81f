"""What every route answers when something goes wrong, and how it is
counted: `/v1/messages` errors in Anthropic's shape (a 404, a 405, a
relayed 429 with its `Retry-After`, an unexpected 500), the other routes in
OpenAI's, every 500 with its `X-Request-ID`, and `parsegate_requests_total`
by route."""

from __future__ import annotations

import anthropic
import httpx
import pytest

from gateway.api import messages as messages_module
from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_metrics import scrape, value
from tests.sdk_clients import anthropic_client, openai_client

ASK = [{"role": "user", "content": "Hi"}]
MESSAGES_BODY = {"model": "qwen3", "max_tokens": 64, "messages": ASK}
RATE_LIMITED = b'{"error": {"message": "slow down", "type": "rate_limit", "code": 429}}'


@pytest.fixture
def gateway(serve, gateway_config) -> str:
    """A gateway of its own per test, so its counts start at zero."""
    return serve(create_app(Config.model_validate(gateway_config)))


def anthropic_error(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    assert set(body) == {"type", "error"} and isinstance(body["error"]["message"], str)
    return body["error"]["message"]


def test_wrong_method_and_unknown_path_under_messages_are_anthropic_errors(gateway, fake):
    wrong_method = httpx.get(f"{gateway}/v1/messages")
    anthropic_error(wrong_method, 405, "invalid_request_error")
    assert wrong_method.headers["allow"] == "POST"
    anthropic_error(httpx.post(f"{gateway}/v1/messages/batches", json=MESSAGES_BODY), 404, "not_found_error")
    anthropic_error(
        httpx.post(f"{gateway}/v1/messages", json={**MESSAGES_BODY, "model": "gpt-9"}), 404, "not_found_error"
    )
    elsewhere = httpx.post(f"{gateway}/v1/nowhere", json={})
    assert elsewhere.status_code == 404 and elsewhere.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("stream", [False, True])
def test_a_relayed_retry_after_reaches_messages_clients(gateway, fake, stream):
    fake.error = (429, RATE_LIMITED)
    fake.error_headers = {"retry-after": "7"}
    client = anthropic_client(gateway)
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(model="qwen3", max_tokens=64, messages=ASK, stream=stream)
    assert raised.value.response.headers["retry-after"] == "7"
    assert raised.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    chat = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "qwen3", "messages": ASK})
    assert chat.status_code == 429 and chat.headers["retry-after"] == "7"


def test_an_unexpected_failure_is_a_500_in_each_surface_shape_with_the_request_id(gateway, fake, monkeypatch):
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the gateway")

    monkeypatch.setattr(messages_module, "read_messages_request", broken)
    monkeypatch.setattr("gateway.api.chat.read_request", broken)
    on_messages = httpx.post(f"{gateway}/v1/messages", json=MESSAGES_BODY, headers={"x-request-id": "bug-1"})
    assert anthropic_error(on_messages, 500, "api_error") == "internal error in the gateway"
    assert on_messages.headers["x-request-id"] == "bug-1"
    on_chat = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "qwen3", "messages": ASK})
    assert on_chat.status_code == 500
    assert on_chat.json()["error"] == {
        "message": "internal error in the gateway",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert len(on_chat.headers["x-request-id"]) == 32  # one the gateway made
    assert "a bug in the gateway" not in on_messages.text + on_chat.text
    samples = scrape(gateway)
    assert value(samples, "parsegate_requests_total", model="unknown", status="500", route="/v1/messages") == 1


def test_every_route_is_counted_by_route(gateway, fake):
    fake.script("Hello!")
    client = openai_client(gateway)
    client.chat.completions.create(model="qwen3", messages=ASK)
    client.responses.create(model="qwen3", input="Hi")
    client.responses.create(model="qwen3", input="Hi", stream=True).close()
    anthropic_client(gateway).messages.create(**MESSAGES_BODY)
    httpx.post(f"{gateway}/v1/messages", json={**MESSAGES_BODY, "max_tokens": "many"})
    httpx.get(f"{gateway}/v1/models")
    httpx.post(f"{gateway}/v1/not-a-route/{'x' * 40}", json={})
    httpx.post(f"{gateway}/v1/another/typo", json={})
    samples = scrape(gateway)
    counted = {
        (dict(labels)["route"], dict(labels)["model"], dict(labels)["status"]): count
        for (name, labels), count in samples.items()
        if name == "parsegate_requests_total"
    }
    assert counted == {
        ("/v1/chat/completions", "qwen3", "200"): 1,
        ("/v1/responses", "qwen3", "200"): 2,
        ("/v1/messages", "qwen3", "200"): 1,
        ("/v1/messages", "unknown", "400"): 1,
        ("/v1/models", "unknown", "200"): 1,
        ("other", "unknown", "404"): 2,
    }
