"""No configured secret (backend key or client key) reaches a client or a
log line: not through any field of a relayed error, streamed or not, not
through an in-stream error event, and not as a prefix left by a cut."""

from __future__ import annotations

import io
import logging

import httpx
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.ops.logs import SecretFilter, TextFormatter
from gateway.ops.secrets import Secrets
from tests.fake_backend import BACKEND_KEY

CLIENT_KEY = "sk-client-planted-7731"
KEYS = (BACKEND_KEY, CLIENT_KEY)
FIELDS = ("message", "type", "param", "code")
MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    config = {
        "server": {"api_keys": [CLIENT_KEY]},
        "models": [{"name": "plain", "backend": {"url": f"{fake_backend_server[1]}/v1", "api_key": BACKEND_KEY}}],
    }
    return serve(create_app(Config.model_validate(config)))


def ask(gateway: str, stream: bool, path: str = "/v1/chat/completions") -> str:
    body = {"model": "plain", "stream": stream}
    body |= {"messages": MESSAGES} if path.endswith("chat/completions") else {"prompt": "Hi"}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    with httpx.stream("POST", f"{gateway}{path}", json=body, headers=headers, timeout=10) as response:
        return response.read().decode()


def assert_no_secret(text: str) -> None:
    for key in KEYS:
        assert key not in text
        assert key[:6] not in text, text  # nor a prefix of one ("sk-bac", "sk-cli")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_any_field_of_a_backend_error_is_masked(gateway, fake, field, key, stream):
    details = {"message": "upstream refused", "type": "invalid_request_error", field: f"bad key {key}!"}
    fake.error = (400, orjson.dumps({"error": details}))
    text = ask(gateway, stream)
    assert_no_secret(text)
    assert "bad key ***!" in text


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_an_in_stream_error_event_is_masked(gateway, fake, field, key):
    details = {"message": "failed", field: f"{key} leaked", "extra": {"nested": key}}
    fake.raw_stream = [b"data: " + orjson.dumps({"error": details}) + b"\n\n"]
    text = ask(gateway, stream=True)
    assert_no_secret(text)
    assert "*** leaked" in text and text.rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
@pytest.mark.parametrize("offset", range(480, 505))
def test_a_key_straddling_the_cut_of_a_long_message_leaves_no_prefix(gateway, fake, offset, path):
    fake.error = (400, ("x" * offset + BACKEND_KEY + "y" * 600).encode())
    text = ask(gateway, stream=False, path=path)
    assert_no_secret(text)
    assert text.startswith('{"error":') and "x" * 100 in text


def test_log_lines_mask_every_secret_even_in_tracebacks():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(SecretFilter(Secrets([BACKEND_KEY, CLIENT_KEY])))
    handler.setFormatter(TextFormatter("%(levelprefix)s %(message)s"))
    logger = logging.getLogger("parsegate.test_secrets")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(f"backend said {BACKEND_KEY}")
        except RuntimeError:
            logger.exception("failed with %s", CLIENT_KEY, extra={"model": f"m-{CLIENT_KEY}"})
    finally:
        logger.removeHandler(handler)
    logged = out.getvalue()
    assert "failed with ***" in logged and "backend said ***" in logged and "model=m-***" in logged
    assert_no_secret(logged)
