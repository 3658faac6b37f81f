"""Security: where client keys come from, what /health and a metrics route
require, that no key leaks into responses or logs, and that nothing in a
request can choose the backend."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import BACKEND_KEY

MESSAGES = [{"role": "user", "content": "Hi"}]
CLIENT_KEY = "sk-client-secret-4821"
WRONG_KEY = "sk-wrong-secret-9913"


def ask(gateway: str, key: str | None, **body: object) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.post(
        f"{gateway}/v1/chat/completions", json={"messages": MESSAGES, **body}, headers=headers, timeout=10
    )


def test_keys_come_from_a_file(serve, fake_backend_server, fake, tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("# one key a line\nsk-from-file-1\n\n  sk-from-file-2  \n")
    config = {
        "server": {"api_keys": ["sk-inline"], "api_keys_file": str(keys)},
        "models": [{"name": "plain", "backend": {"url": f"{fake_backend_server[1]}/v1"}}],
    }
    url = serve(create_app(Config.model_validate(config)))
    for key in ("sk-inline", "sk-from-file-1", "sk-from-file-2"):
        assert ask(url, key, model="plain").status_code == 200
    for key in ("# one key a line", "sk-from-file", None):
        assert ask(url, key, model="plain").status_code == 401


def test_an_unreadable_keys_file_stops_start_up(tmp_path):
    with pytest.raises(ValueError, match="api_keys_file: cannot read"):
        Config.model_validate(
            {
                "server": {"api_keys_file": str(tmp_path / "absent")},
                "models": [{"name": "m", "backend": {"demo": True}}],
            }
        )


@pytest.mark.parametrize("protected", [True, False])
def test_metrics_auth_guards_metrics_and_health_stays_open(serve, protected):
    config = {
        "server": {"api_keys": [CLIENT_KEY], "metrics_auth": protected},
        "models": [{"name": "m", "backend": {"demo": True}}],
    }
    url = serve(create_app(Config.model_validate(config)))
    assert httpx.get(f"{url}/metrics").status_code == (401 if protected else 200)
    assert httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {CLIENT_KEY}"}).status_code == 200
    assert httpx.get(f"{url}/health").status_code == 200


def test_a_request_cannot_choose_the_backend(serve, fake_backend_server, fake, closed_port):
    config = {"models": [{"name": "plain", "backend": {"url": f"{fake_backend_server[1]}/v1"}}]}
    url = serve(create_app(Config.model_validate(config)))
    elsewhere = f"http://127.0.0.1:{closed_port}/v1"
    response = ask(url, None, model="plain", base_url=elsewhere, url=elsewhere, api_base=elsewhere)
    assert response.status_code == 200 and len(fake.requests) == 1
    assert ask(url, None, model=elsewhere).status_code == 404


@pytest.mark.slow  # 10 s
def test_no_key_reaches_a_response_or_the_log(gateway_process, fake_backend_server, fake, closed_port):
    fake_url = f"{fake_backend_server[1]}/v1"
    gateway = gateway_process(
        {
            "server": {"api_keys": ["${TEST_CLIENT_KEY}"]},
            "models": [
                {"name": "plain", "backend": {"url": fake_url, "api_key": "${TEST_BACKEND_KEY}"}},
                {"name": "down", "backend": {"url": f"http://127.0.0.1:{closed_port}/v1", "api_key": BACKEND_KEY}},
            ],
        },
        env={"TEST_CLIENT_KEY": CLIENT_KEY, "TEST_BACKEND_KEY": BACKEND_KEY},
    )
    echo = orjson.dumps({"error": {"message": f"bad key {BACKEND_KEY}", "type": "auth"}})
    responses = [ask(gateway.url, WRONG_KEY, model="plain"), ask(gateway.url, None, model="plain")]
    fake.error = (400, echo)
    responses += [ask(gateway.url, CLIENT_KEY, model="plain", stream=stream) for stream in (False, True)]
    fake.error = None
    fake.raw_stream = [b"data: " + echo + b"\n\n"]
    responses += [ask(gateway.url, CLIENT_KEY, model="plain", stream=True)]
    responses += [ask(gateway.url, CLIENT_KEY, model="down"), ask(gateway.url, CLIENT_KEY, model="nope")]
    statuses = [response.status_code for response in responses]
    assert statuses == [401, 401, 400, 400, 200, 502, 404]
    assert "***" in responses[4].text and "***" in responses[2].text
    gateway.stop()
    texts = [response.text + str(response.headers) for response in responses] + ["".join(gateway.log)]
    assert "POST /v1/chat/completions" in texts[-1]  # the log was captured
    for text in texts:
        for key in (BACKEND_KEY, CLIENT_KEY, WRONG_KEY):
            assert key not in text
