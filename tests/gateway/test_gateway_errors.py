"""The real gateway's errors, auth and small routes: every error in OpenAI's
body, with the status a client can act on."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import BACKEND_KEY
from tests.sdk_clients import openai_client

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

MESSAGES = [{"role": "user", "content": "Hi"}]
THINKING = "<think>\nStill thinking about it"


@pytest.fixture(scope="module")
def http(gateway_url: str) -> httpx.Client:
    with httpx.Client(base_url=gateway_url, timeout=10) as client:
        yield client


def error_of(response: httpx.Response, status: int) -> dict:
    """The OpenAI error object of a response that must have `status`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert "Traceback" not in error["message"]
    return error


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b'{"model": "qwen3"}', "messages"),
        (b'{"model": "qwen3", "messages": []}', "messages"),
        (b'{"messages": [{"role": "user", "content": "Hi"}]}', "model"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "stream": "yes"}', "stream"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "n": 0}', "n"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "tools": [{"type": "function"}]}', "tools[0].function"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "tool_choice": "always"}', "tool_choice"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "tool_choice": "required"}', "tool_choice"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "separate_reasoning": 1}', "separate_reasoning"),
        (b'{"model": "qwen3", "messages": [{"role": "user"}], "chat_template_kwargs": []}', "chat_template_kwargs"),
    ],
)
def test_malformed_requests_are_400_naming_the_field(http, fake, body, param):
    error = error_of(http.post("/v1/chat/completions", content=body), 400)
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert fake.requests == []


def test_named_tool_choice_must_name_a_tool(client, fake):
    tools = [{"type": "function", "function": {"name": "get_weather"}}]
    named = {"type": "function", "function": {"name": "get_time"}}
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=tools, tool_choice=named)
    assert "get_time" in raised.value.message and raised.value.param == "tool_choice"


def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert raised.value.code == "model_not_found" and raised.value.param == "model"


@pytest.mark.parametrize("stream", [False, True])
def test_backend_down_is_502_in_words_and_logged_in_detail(http, stream, closed_port, caplog):
    """The client learns which model's backend and what happened, never the
    backend's URL or the HTTP client's own text; the log has both, with the
    request id."""
    body = {"model": "down", "messages": MESSAGES, "stream": stream}
    response = http.post("/v1/chat/completions", json=body, headers={"x-request-id": "req-down-42"})
    error = error_of(response, 502)
    assert error["type"] == "upstream_error" and error["code"] == "upstream_unreachable"
    assert error["message"] == "the backend for model 'down' is unreachable: it refused the connection"
    assert str(closed_port) not in response.text
    logged = [record.getMessage() for record in caplog.records if record.name == "parsegate.backend"]
    assert logged and all(line.startswith(error["message"] + " (request req-down-42): ") for line in logged)
    assert f"127.0.0.1:{closed_port}" in logged[-1]  # aiohttp's text, for the operator


@pytest.fixture(scope="module")
def not_http() -> Iterator[int]:
    """A port that answers every request with a status line and a header
    aiohttp cannot parse."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)

        def answer() -> None:
            while True:
                try:
                    connection, _ = server.accept()
                except OSError:
                    return
                with connection:
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Secret-Route /internal\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        yield server.getsockname()[1]


def test_a_backend_answering_garbage_is_502_without_its_bytes(serve, not_http):
    config = {"models": [{"name": "garbled", "backend": {"url": f"http://127.0.0.1:{not_http}/v1", "retries": 0}}]}
    gateway = serve(create_app(Config.model_validate(config)))
    response = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "garbled", "messages": MESSAGES}, timeout=10)
    error = error_of(response, 502)
    assert (
        error["message"]
        == "the backend for model 'garbled' connection failed: it answered with something that is not HTTP"
    )
    assert "internal" not in response.text and str(not_http) not in response.text


def test_backend_timeout_is_504(http, fake):
    fake.hold_headers = True  # the `slow` model has `timeout: 0.2`
    error = error_of(http.post("/v1/chat/completions", json={"model": "slow", "messages": MESSAGES}), 504)
    assert "timed out" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_backend_openai_error_passes_through(client, fake, stream):
    detail = {"message": "maximum context length is 8 tokens", "type": "BadRequestError", "param": None, "code": 400}
    fake.error = (400, orjson.dumps({"object": "error", **detail}))
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="qwen3", messages=MESSAGES, stream=stream)
    assert raised.value.body == {**detail, "code": "400"}


def test_backend_plain_text_error_keeps_its_status(http, fake):
    fake.error = (503, b"server overloaded, retry later")
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 503)
    assert error["message"] == "server overloaded, retry later" and error["type"] == "upstream_error"


def test_backend_500_is_a_502_with_its_message(http, fake):
    """A 500 from the gateway is a fault of its own; the backend's is a bad gateway."""
    fake.error = (500, orjson.dumps({"error": {"message": "CUDA error: out of memory", "type": "InternalServerError"}}))
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 502)
    assert error["message"] == "CUDA error: out of memory" and error["type"] == "InternalServerError"
    fake.error = (500, b"")
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 502)
    assert error["type"] == "upstream_error"


def test_backend_key_never_reaches_the_client(http, fake):
    fake.error = (400, orjson.dumps({"error": {"message": f"bad key {BACKEND_KEY}"}}))
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 400)
    assert BACKEND_KEY not in error["message"] and "***" in error["message"]


def test_backend_invalid_json_is_502(http, fake):
    fake.error = (200, b"this is not JSON")
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 502)
    assert error["code"] == "upstream_invalid_response" and "invalid response" in error["message"]


@pytest.mark.parametrize(
    "choices",
    [
        [5],
        [{"index": "0", "message": {"content": "Hi"}, "finish_reason": "stop"}],
        [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}] * 2,
        [{"index": 0, "message": {"content": 5}, "finish_reason": "stop"}],
    ],
    ids=["a choice not an object", "index a string", "two choices at one index", "content a number"],
)
def test_backend_answer_with_malformed_choices_is_502(http, fake, choices):
    fake.error = (200, orjson.dumps({"id": "up-1", "object": "chat.completion", "choices": choices}))
    error = error_of(http.post("/v1/chat/completions", json={"model": "qwen3", "messages": MESSAGES}), 502)
    assert error["code"] == "upstream_invalid_response" and "invalid response" in error["message"]


def test_stream_cut_short_flushes_then_sends_an_error_event(http, client, fake):
    fake.script(THINKING, chunk_size=5)
    fake.cut = True
    body = {"model": "qwen3", "messages": MESSAGES, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert orjson.loads(events[-2])["error"]["type"] == "upstream_error"
    chunks = [orjson.loads(event) for event in events[:-2]]
    reasoning = "".join(chunk["choices"][0]["delta"].get("reasoning_content", "") for chunk in chunks)
    assert reasoning.strip() == "Still thinking about it"
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="qwen3", messages=MESSAGES, stream=True))


def test_unknown_route_and_method_use_the_openai_body(http):
    assert error_of(http.get("/v1/nothing"), 404)["code"] == "not_found"
    error_of(http.get("/v1/chat/completions"), 405)


def test_models_lists_the_configured_models(client, gateway_config):
    models = client.models.list().data
    assert [model.id for model in models] == [model["name"] for model in gateway_config["models"]]
    assert "qwen3" in [model.id for model in models]
    assert {model.owned_by for model in models} == {"parsegate"}


def test_health_never_calls_a_backend(http, fake):
    response = http.get("/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert fake.requests == []


@pytest.fixture(scope="module")
def locked_url(serve, gateway_config: dict) -> str:
    """A gateway that wants one of two bearer keys on /v1."""
    config = {**gateway_config, "server": {"api_keys": ["sk-gw-one", "sk-gw-two"]}}
    return serve(create_app(Config.model_validate(config)))


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer sk-gw-three"}, {"authorization": "sk-gw-one"}])
def test_api_keys_reject_missing_or_wrong_keys(locked_url, fake, headers):
    body = {"model": "qwen3", "messages": MESSAGES}
    responses = [
        httpx.get(f"{locked_url}/v1/models", headers=headers),
        httpx.post(f"{locked_url}/v1/chat/completions", json=body, headers=headers),
        httpx.post(f"{locked_url}/v1/completions", json={"model": "qwen3", "prompt": "Hi"}, headers=headers),
    ]
    for response in responses:
        error = error_of(response, 401)
        assert error["code"] == "invalid_api_key" and "sk-gw" not in error["message"]
    assert fake.requests == []


def test_api_keys_accept_any_configured_key(locked_url, fake):
    fake.script("<think>\nok\n</think>\n\nAll good.")
    client = openai_client(locked_url, api_key="sk-gw-two")
    assert [model.id for model in client.models.list().data][0] == "qwen3"
    message = client.chat.completions.create(model="qwen3", messages=MESSAGES).choices[0].message
    assert message.content.strip() == "All good."
    assert "sk-gw-two" not in str(fake.requests[-1][0])
    assert httpx.get(f"{locked_url}/health").status_code == 200
