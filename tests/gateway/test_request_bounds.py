"""What one request may cost: the item bound on every surface, and template
mode's render deadline, prompt size and memory, with the gateway answering
other clients while a template runs away."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anthropic
import httpx
import openai
import orjson
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_template_mode import QWEN3
from tests.sdk_clients import anthropic_client, openai_client

ASK = [{"role": "user", "content": "Hi"}]
TEMPLATES = {
    # 10^10 loop turns that write nothing: minutes of CPU without a single piece of output
    "spin": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    # a loop that writes the first message 100,000 times
    "echo": "{% for i in range(100000) %}{{ messages[0]['content'] }}{% endfor %}",
    # a 2 GB string built in one step
    "hoard": "{{ 'x' * 2000000000 }}",
}


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    _, fake_url = fake_backend_server
    folder = tmp_path_factory.mktemp("templates")
    for name, text in TEMPLATES.items():
        (folder / f"{name}.jinja").write_text(text)

    def entry(name: str, **extra: object) -> dict:
        plain = {"reasoning_parser": "none", "tool_call_parser": "none"}
        return {"name": name, "backend": {"url": f"{fake_url}/v1"}, **plain, **extra}

    models = [
        entry("chat"),
        entry("chat-2", max_input_items=2),
        entry("qwen3-t", chat_template=str(QWEN3), max_input_items=2),
        entry("spin", chat_template=str(folder / "spin.jinja"), render_timeout=1),
        entry("echo", chat_template=str(folder / "echo.jinja"), max_prompt_chars=1000),
        entry("hoard", chat_template=str(folder / "hoard.jinja")),
    ]
    config = {"server": {"max_input_items": 4}, "models": models}
    return serve(create_app(Config.model_validate(config)))


def _messages(count: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(count)]


@pytest.mark.parametrize(("model", "limit"), [("chat", 4), ("chat-2", 2), ("qwen3-t", 2)])
def test_chat_over_the_item_bound_is_400_naming_it(gateway, fake, model, limit):
    client = openai_client(gateway)
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=model, messages=_messages(limit + 1))
    error = raised.value.body
    assert error["code"] == "array_above_max_length" and error["param"] == "messages"
    assert f"messages holds {limit + 1} items" in error["message"] and f"at most {limit}" in error["message"]
    assert "max_input_items" in error["message"]
    assert fake.requests == []
    fake.script("Hello.")
    reply = client.chat.completions.create(model=model, messages=_messages(limit - 1))
    assert reply.choices[0].message.content == "Hello."


def test_responses_over_the_item_bound_is_400_naming_it(gateway, fake):
    client = openai_client(gateway)
    items = [{"type": "message", "role": "user", "content": "x"}] * 5
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="chat", input=items)
    error = raised.value.body
    assert error["code"] == "array_above_max_length" and error["param"] == "input"
    assert "input holds 5 items; this gateway takes at most 4 (max_input_items)" in error["message"]
    assert fake.requests == []


def test_responses_of_250_000_tiny_items_are_refused_before_they_are_walked(gateway, fake):
    body = orjson.dumps({"model": "chat", "input": [{"role": "user", "content": "abcdefgh"}] * 250_000})
    assert len(body) > 9_000_000
    response = httpx.post(f"{gateway}/v1/responses", content=body, timeout=60)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "array_above_max_length"
    assert fake.requests == []


@pytest.mark.parametrize("count_tokens", [False, True])
def test_messages_over_the_item_bound_is_an_anthropic_400(gateway, fake, count_tokens):
    client = anthropic_client(gateway)
    turns = _messages(3)
    with pytest.raises(anthropic.BadRequestError) as raised:
        if count_tokens:
            client.messages.count_tokens(model="chat-2", messages=turns)
        else:
            client.messages.create(model="chat-2", max_tokens=10, messages=turns)
    body = raised.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "messages holds 3 items; this gateway takes at most 2 (max_input_items)" in body["error"]["message"]
    assert fake.requests == []


def test_health_answers_while_a_template_spins_and_the_request_gets_the_deadline(gateway, fake):
    body = {"model": "spin", "messages": ASK}
    answered = 0
    with ThreadPoolExecutor(1) as pool:
        spinning = pool.submit(httpx.post, f"{gateway}/v1/chat/completions", json=body, timeout=120)
        while not spinning.done():
            assert httpx.get(f"{gateway}/health", timeout=10).json() == {"status": "ok"}
            answered += 1
        response = spinning.result()
    assert answered > 0
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "render_timeout"
    assert "model 'spin'" in error["message"] and "render_timeout (1 s)" in error["message"]
    assert fake.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_over_max_prompt_chars_is_400_naming_the_limit(gateway, fake, stream):
    client = openai_client(gateway)
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "0123456789"}], stream=stream
        )
    error = raised.value.body
    assert error["code"] == "prompt_too_long"
    assert error["message"] == "the prompt for model 'echo' is longer than its max_prompt_chars (1000 characters)"
    assert fake.requests == []
    fake.script("Short.")
    reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": ""}])
    assert reply.choices[0].message.content == "Short."


def test_a_template_that_builds_a_huge_string_gets_an_error_not_the_host_s_memory(gateway, fake):
    response = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "hoard", "messages": ASK}, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "render_failed" and "ran out of memory" in error["message"]
    assert fake.requests == []
    assert httpx.get(f"{gateway}/health").status_code == 200
