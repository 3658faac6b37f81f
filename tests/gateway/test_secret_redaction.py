"""No configured secret (backend key or client key) reaches a client or a
log line: not through any field of a relayed error, streamed or not, not
through an in-stream error event, and not as a prefix left by a cut."""

from __future__ import annotations

import base64
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


URL_USER = "parsegate"
URL_PASSWORDS = {"plain": ("s3cret-url-pass", "s3cret-url-pass"), "percent-encoded": ("p%40ss-w0rd%21", "p@ss-w0rd!")}


@pytest.fixture(scope="module")
def password_gateway(serve, fake_backend_server) -> str:
    """A model for each password, in its backend's URL (`http://user:password@host`)."""
    _, fake_url = fake_backend_server
    models = [
        {"name": name, "backend": {"url": fake_url.replace("//", f"//{URL_USER}:{written}@") + "/v1"}}
        for name, (written, _) in URL_PASSWORDS.items()
    ]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", URL_PASSWORDS)
def test_a_url_password_quoted_in_basic_form_is_masked(password_gateway, fake, model, stream):
    """The client turns a URL's credentials into `Authorization: Basic
    base64(user:password)`; a backend error that quotes its request's
    headers (or the password itself) reaches the client masked."""
    written, password = URL_PASSWORDS[model]
    basic = base64.b64encode(f"{URL_USER}:{password}".encode()).decode()
    quoted = f"headers: {{'Authorization': 'Basic {basic}'}}; password {password}, as written {written}"
    fake.error = (400, orjson.dumps({"error": {"message": quoted, "type": "invalid_request_error"}}))
    body = {"model": model, "messages": MESSAGES, "stream": stream}
    response = httpx.post(f"{password_gateway}/v1/chat/completions", json=body, timeout=10)
    assert fake.requests[-1][0]["authorization"] == f"Basic {basic}"  # what the backend was sent
    masked = "headers: {'Authorization': 'Basic ***'}; password ***, as written ***"
    assert response.status_code == 400 and response.json()["error"]["message"] == masked
    assert basic not in response.text and password not in response.text


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
