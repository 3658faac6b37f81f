"""Upstream conventions: Retry-After on 429/503 reaches the client, a
backend refusing the gateway's key is a 502 naming the model (the client's
key is fine), keep-alive comments come every `PING_SECONDS` of quiet, and
/openapi.json is behind the key when keys are set."""

from __future__ import annotations

import asyncio

import httpx
import orjson
import pytest

from gateway.api.sse import EventStream
from gateway.api.sse_frames import PING
from gateway.app import create_app
from gateway.ops.config import Config
from tests import virtual_clock

MESSAGES = [{"role": "user", "content": "Hi"}]
CLIENT_KEY = "sk-client-conventions-1"


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    config = {"models": [{"name": "plain", "backend": {"url": f"{fake_backend_server[1]}/v1", "retries": 0}}]}
    return serve(create_app(Config.model_validate(config)))


def ask(gateway: str, stream: bool) -> httpx.Response:
    body = {"model": "plain", "messages": MESSAGES, "stream": stream}
    return httpx.post(f"{gateway}/v1/chat/completions", json=body, timeout=10)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_reaches_the_client(gateway, fake, status, stream):
    fake.error = (status, b'{"error": {"message": "busy"}}')
    fake.error_headers = {"retry-after": "7"}
    response = ask(gateway, stream)
    assert response.status_code == status and response.headers["retry-after"] == "7"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("status", [401, 403])
def test_a_backend_refusing_the_gateways_key_is_a_502_naming_the_model(gateway, fake, status, stream):
    fake.error = (status, b'{"error": {"message": "invalid api key", "type": "authentication_error"}}')
    response = ask(gateway, stream)
    assert response.status_code == 502
    error = response.json()["error"]
    assert "'plain'" in error["message"] and "backend.api_key" in error["message"]
    assert error["code"] == "upstream_auth_failed" and error["type"] == "upstream_error"


def test_the_first_keep_alive_comes_one_period_after_the_last_event():
    """An event, then quiet: the ping comes `ping_seconds` after the event,
    not up to twice that (a ping was skipped in the period the event fell in).
    On a virtual clock (tests/virtual_clock.py): exact, however loaded the machine."""
    period = 0.5

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        stop, times = asyncio.Event(), {}

        async def events(out: EventStream) -> None:
            await asyncio.sleep(period * 0.2)  # the event falls inside the first period
            await out.send(b"data: 1\n\n")
            await stop.wait()

        async def send(message: dict) -> None:
            if message.get("body") == b"data: 1\n\n":
                times["event"] = loop.time()
            if message.get("body") == PING:
                times["ping"] = loop.time()
                stop.set()

        async def receive() -> dict:
            await asyncio.Event().wait()

        await EventStream(events, ping_seconds=period)({"type": "http"}, receive, send)
        return times["ping"] - times["event"]

    assert virtual_clock.run(scenario()) == pytest.approx(period)


@pytest.mark.parametrize(("public", "status"), [(False, 401), (True, 200)])
def test_openapi_is_behind_the_key_unless_opened(serve, public, status):
    config = {
        "server": {"api_keys": [CLIENT_KEY], "openapi_public": public},
        "models": [{"name": "secret-model-name", "backend": {"demo": True}}],
    }
    url = serve(create_app(Config.model_validate(config)))
    assert httpx.get(f"{url}/openapi.json").status_code == status
    keyed = httpx.get(f"{url}/openapi.json", headers={"authorization": f"Bearer {CLIENT_KEY}"})
    assert keyed.status_code == 200 and "/v1/chat/completions" in orjson.loads(keyed.content)["paths"]


def test_a_cookie_one_answer_sets_never_reaches_the_backend_with_another_request(gateway, fake):
    fake.error = (429, b'{"error": {"message": "busy"}}')
    fake.error_headers = {"set-cookie": "affinity=client-a; Path=/"}
    assert ask(gateway, stream=False).status_code == 429
    fake.error, fake.error_headers = None, {}
    assert ask(gateway, stream=True).status_code == 200
    headers, _ = fake.requests[-1]
    assert "cookie" not in headers


@pytest.mark.parametrize("stream", [False, True])
def test_a_redirect_from_the_backend_is_not_followed(gateway, fake, fake_backend_server, stream):
    fake.error = (307, b"")
    fake.error_headers = {"location": f"{fake_backend_server[1]}/v1/chat/completions"}
    response = ask(gateway, stream)
    assert response.status_code == 502 and response.json()["error"]["type"] == "upstream_error"
    assert len(fake.requests) == 1
