"""The backend calls that are not generations (`GET /props` in template
mode, the tokenizers of count_tokens, `parsegate render --config`), on a
scripted loopback server that can hang: each has the backend's deadlines,
key, URLs and redaction, and fails as a well-formed error, never a hang."""

from __future__ import annotations

import logging
import math
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx
import pytest
import yaml

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.render import render_request
from gateway.upstream.asked_once import FAILURE_KEPT_SECONDS
from tests.scripted_backend import HANG, ScriptedBackend, completion_answer
from tests.sdk_clients import anthropic_client

SHORT = {"first_byte_timeout": 0.3, "idle_timeout": 0.3}  # seconds: the deadlines under test
KEY = "sk-side-call-key"
PASSWORD = "s3cret-in-the-url"
MESSAGES = [{"role": "user", "content": "Hi"}]
ASK = [{"role": "user", "content": "Count these words for me, please."}]
TEMPLATE = "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}"
ESTIMATE = math.ceil(len(ASK[0]["content"]) / 4)


@pytest.fixture(scope="module")
def gateway(serve, scripted: ScriptedBackend, closed_port: int) -> str:
    url = f"{scripted.url}/v1"
    on_props = {"chat_template": "backend", "reasoning_parser": "none", "tool_call_parser": "none"}
    models = [
        {"name": "props", "backend": {"url": url, "server": "llamacpp", "api_key": KEY, **SHORT}, **on_props},
        {"name": "props-404", "backend": {"url": url, "server": "llamacpp"}, **on_props},
        {"name": "props-failing", "backend": {"url": url, "server": "llamacpp"}, **on_props},
        {
            "name": "props-down",
            "backend": {"url": f"http://127.0.0.1:{closed_port}/v1", "server": "llamacpp"},
            **on_props,
        },
        {"name": "vllm", "backend": {"url": url, "server": "vllm", **SHORT}},
        {"name": "llamacpp", "backend": {"url": url, "server": "llamacpp", **SHORT}},
        {"name": "vllm-password", "backend": {"url": url.replace("//", f"//parsegate:{PASSWORD}@"), "server": "vllm"}},
    ]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture
def http(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=10) as client:
        yield client


@pytest.fixture
def claude(gateway: str) -> anthropic.Anthropic:
    return anthropic_client(gateway)


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


def test_a_props_that_hangs_fails_at_the_first_byte_deadline_until_it_answers(http, side, failure_clock):
    side.routes["/props"] = HANG
    chat = {"model": "props", "messages": MESSAGES}
    with ThreadPoolExecutor(3) as requests:
        first = requests.submit(http.post, "/v1/chat/completions", json=chat)
        assert side.held.acquire(timeout=10)  # the first request's GET /props is held: the others wait on it
        replies = [first, *(requests.submit(http.post, "/v1/chat/completions", json=chat) for _ in range(2))]
        errors = [error_of(reply.result(), 504) for reply in replies]
    errors.append(error_of(http.post("/v1/chat/completions", json=chat), 504))  # and one after them
    assert errors == [errors[0]] * 4 and errors[0]["code"] == "upstream_timeout" and "timed out" in errors[0]["message"]
    assert side.asked("/props") == 1
    side.routes["/props"] = (200, {"chat_template": TEMPLATE, "bos_token": "<s>"})
    side.routes["/v1/completions"] = completion_answer("Hello.")
    failure_clock.pass_the_window()
    for _ in range(2):
        reply = http.post("/v1/chat/completions", json={"model": "props", "messages": MESSAGES})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Hello."
    assert side.asked("/props") == 2  # asked again after the failure's window, kept once answered
    assert side.received("/v1/completions")[-1]["prompt"] == "[Hi]"
    assert all(headers["authorization"] == f"Bearer {KEY}" for _, _, headers, _ in side.requests)


def test_a_failing_props_is_asked_once_per_window_and_a_recovered_server_is_used_after_it(http, side, failure_clock):
    side.routes["/props"] = (500, {"error": {"message": "loading the template failed"}})
    chat = {"model": "props-failing", "messages": MESSAGES}
    errors = [error_of(http.post("/v1/chat/completions", json=chat), 502) for _ in range(5)]
    assert side.asked("/props") == 1
    assert errors == [errors[0]] * 5 and errors[0]["code"] == "upstream_no_template"
    assert errors[0]["message"].endswith("at /props: it answered HTTP 500: loading the template failed")
    failure_clock.now += FAILURE_KEPT_SECONDS - 0.1  # still within the window
    assert error_of(http.post("/v1/chat/completions", json=chat), 502) == errors[0]
    assert side.asked("/props") == 1
    side.routes["/props"] = (200, {"chat_template": TEMPLATE, "bos_token": "<s>"})
    side.routes["/v1/completions"] = completion_answer("Hello.")
    failure_clock.now = failure_clock.start + FAILURE_KEPT_SECONDS
    for _ in range(2):
        reply = http.post("/v1/chat/completions", json=chat)
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Hello."
    assert side.asked("/props") == 2


def test_an_unreachable_props_is_a_502_saying_so(http):
    error = error_of(http.post("/v1/chat/completions", json={"model": "props-down", "messages": MESSAGES}), 502)
    assert error["code"] == "upstream_unreachable" and "unreachable" in error["message"]
    assert "chat_template" not in error["message"]


def test_a_props_without_a_template_is_a_502_naming_what_the_server_answered(http, side):
    error = error_of(http.post("/v1/chat/completions", json={"model": "props-404", "messages": MESSAGES}), 502)
    assert error["code"] == "upstream_no_template"
    assert error["message"].endswith("did not report its chat template at /props: it answered HTTP 404: Not Found")


def test_render_asks_props_with_the_backend_s_key_on_every_url(tmp_path: Path, side, closed_port):
    side.routes["/props"] = (200, {"chat_template": TEMPLATE, "bos_token": "<s>"})
    entry = {
        "name": "m",
        "chat_template": "backend",
        "backend": {"urls": [f"http://127.0.0.1:{closed_port}/v1", f"{side.url}/v1"], "api_key": KEY},
    }
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"models": [entry]}))
    request = b'{"messages": [{"role": "user", "content": "Hi"}]}'
    assert render_request(request, config=str(config), model="m") == "<s>[Hi]"
    [(_, _, headers, _)] = side.requests
    assert headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("model", ["vllm", "llamacpp"])
def test_count_tokens_estimates_when_the_tokenizer_hangs(claude, side, model):
    side.routes["/tokenize"] = side.routes["/apply-template"] = HANG
    assert claude.messages.count_tokens(model=model, messages=ASK).input_tokens == ESTIMATE


@pytest.mark.parametrize("count", [2**64, -5, True, 1.5, None], ids=["over-2^64", "negative", "bool", "float", "null"])
def test_count_tokens_estimates_when_the_tokenizer_counts_nonsense(claude, side, count):
    side.routes["/tokenize"] = (200, {"count": count})
    assert claude.messages.count_tokens(model="vllm", messages=ASK).input_tokens == ESTIMATE


def test_count_tokens_passes_on_a_plain_count(claude, side):
    side.routes["/tokenize"] = (200, {"count": 2**53})
    assert claude.messages.count_tokens(model="vllm", messages=ASK).input_tokens == 2**53


def test_a_password_in_the_backend_url_stays_out_of_the_count_tokens_warning(claude, side, caplog):
    side.routes["/tokenize"] = (
        500,
        {"error": {"message": f"no tokenizer at {side.url.replace('//', f'//parsegate:{PASSWORD}@')}"}},
    )
    with caplog.at_level(logging.WARNING, logger="parsegate.tokens"):
        assert claude.messages.count_tokens(model="vllm-password", messages=ASK).input_tokens == ESTIMATE
    [warning] = [record.getMessage() for record in caplog.records if record.name == "parsegate.tokens"]
    assert "count_tokens" in warning and "parsegate:***@" in warning and PASSWORD not in warning
    [(_, _, headers, _)] = side.requests
    assert headers["authorization"].startswith("Basic ")  # the URL's user and password still reach the server


class _AccessLog(logging.Handler):
    """Notes the access-log line of a count_tokens request the client left."""

    def __init__(self) -> None:
        super().__init__()
        self.client_left = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "POST /v1/messages/count_tokens 499":
            self.client_left.set()


def test_a_count_tokens_whose_client_left_frees_its_slot(serve, side):
    """With one request allowed in flight, a count_tokens left waiting on a
    tokenizer that never answers (and a long deadline) must not hold the
    only slot once its client is gone."""
    config = {
        "server": {"max_concurrent_requests": 1},
        "models": [{"name": "vllm", "backend": {"url": f"{side.url}/v1", "server": "vllm", "timeout": 600}}],
    }
    gateway = serve(create_app(Config.model_validate(config)))
    side.routes["/tokenize"] = HANG
    access = _AccessLog()
    access_log = logging.getLogger("parsegate.access")
    level = access_log.level
    access_log.setLevel(logging.INFO)
    access_log.addHandler(access)
    try:
        host, port = gateway.removeprefix("http://").split(":")
        body = b'{"model": "vllm", "messages": [{"role": "user", "content": "Hi"}]}'
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.sendall(
                b"POST /v1/messages/count_tokens HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            assert side.held.acquire(timeout=10)  # the tokenizer has the request
        assert side.left.acquire(timeout=10)  # the gateway hung up on the tokenizer
        assert access.client_left.wait(timeout=10)  # and answered the request (its slot freed)
    finally:
        access_log.removeHandler(access)
        access_log.setLevel(level)
    response = httpx.get(f"{gateway}/v1/models", timeout=10)
    assert response.status_code == 200, response.text
