"""The catch-all model entry (`name: "*"`): any model name no entry serves
goes to a default backend, as requested, with parsers picked from that name."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config, ModelConfig
from gateway.upstream.backend import Backend
from gateway.upstream.serving import entry_serving
from tests.fake_backend import BACKEND_KEY
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TOOLS, message_result
from tests.sdk_clients import openai_client

GLM_CALL = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>"


def gateway(serve, fake_url: str, catch_all: dict) -> openai.OpenAI:
    config = {
        "models": [
            {"name": "plain", "backend": {"url": f"{fake_url}/v1"}, "reasoning_parser": "none"},
            {"name": "*", "backend": {"url": f"{fake_url}/v1", "api_key": BACKEND_KEY}, **catch_all},
        ]
    }
    url = serve(create_app(Config.model_validate(config)))
    return openai_client(url)


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    return gateway(serve, fake_backend_server[1], {})


@pytest.fixture(scope="module")
def fixed_client(serve, fake_backend_server) -> openai.OpenAI:
    """A catch-all that sends everything to one backend model, with its own parsers."""
    return gateway(
        serve,
        fake_backend_server[1],
        {"backend": {"url": f"{fake_backend_server[1]}/v1", "model": "house-model"}, "tool_call_parser": "glm45"},
    )


def test_any_other_model_name_goes_to_the_default_backend_with_parsers_from_its_name(client, fake):
    fake.script(ONE_CALL)
    reply = client.chat.completions.create(model="Qwen/Qwen3-8B", messages=MESSAGES, tools=TOOLS)
    assert reply.model == "Qwen/Qwen3-8B"
    assert message_result(reply.choices[0])["tool_calls"] == [("get_weather", {"city": "Paris"})]
    assert fake.last_body["model"] == "Qwen/Qwen3-8B"
    assert fake.requests[-1][0]["authorization"] == f"Bearer {BACKEND_KEY}"

    fake.script(GLM_CALL)
    reply = client.chat.completions.create(model="zai-org/GLM-4.6", messages=MESSAGES, tools=TOOLS, stream=False)
    assert message_result(reply.choices[0])["tool_calls"] == [("get_weather", {"city": "Rome"})]


def test_a_name_without_a_pattern_is_passed_through_unparsed(client, fake):
    fake.script(ONE_CALL)
    reply = client.chat.completions.create(model="my-finetune", messages=MESSAGES, tools=TOOLS)
    assert reply.choices[0].message.content == ONE_CALL and fake.last_body["model"] == "my-finetune"


def test_named_entries_still_win(client, fake):
    fake.script(ONE_CALL)
    reply = client.chat.completions.create(model="plain", messages=MESSAGES, tools=TOOLS)
    assert reply.choices[0].message.content == ONE_CALL
    assert "authorization" not in fake.requests[-1][0]  # the "plain" entry has no key


def test_models_lists_the_entries_then_what_the_default_backend_serves(client, fake):
    fake.models = ["Qwen/Qwen3-8B", "plain", "zai-org/GLM-4.6"]
    assert [model.id for model in client.models.list().data] == ["plain", "Qwen/Qwen3-8B", "zai-org/GLM-4.6"]
    assert fake.listings[-1]["authorization"] == f"Bearer {BACKEND_KEY}"  # asked with the entry's key


def test_models_still_answers_when_the_default_backend_cannot_list(client, fake):
    fake.error = (500, b"boom")
    assert [model.id for model in client.models.list().data] == ["plain"]


def test_a_fixed_backend_model_serves_every_name(fixed_client, fake):
    fake.script("<tool_call>get_time\n</tool_call>")
    reply = fixed_client.chat.completions.create(model="anything", messages=MESSAGES, tools=TOOLS, stream=True)
    calls = [call for chunk in reply for call in (chunk.choices[0].delta.tool_calls or [])]
    names = [call.function.name for call in calls if call.function.name]
    assert names == ["get_time"] and fake.last_body["model"] == "house-model"
    assert [model.id for model in fixed_client.models.list().data] == ["plain"]


def test_text_completions_route_the_same_way(client, fake):
    fake.script("raw text")
    assert client.completions.create(model="any/Model-X", prompt="Hi").choices[0].text == "raw text"
    assert fake.last_body["model"] == "any/Model-X"


def test_without_a_catch_all_unknown_names_are_404(gateway_url):
    response = httpx.post(f"{gateway_url}/v1/chat/completions", json={"model": "Qwen/Qwen3-8B", "messages": MESSAGES})
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"


STREAM_BODY = b'{"model": "x", "messages": [{"role": "user", "content": "hi"}], "stream": true}'


def catch_all_backend(fake_url: str) -> Backend:
    return Backend(ModelConfig.model_validate({"name": "*", "backend": {"url": f"{fake_url}/v1"}}))


def test_a_reload_closes_the_catch_all_pool_once_its_last_stream_ends(fake_backend_server, fake):
    async def run() -> tuple[bool, bool]:
        backend = catch_all_backend(fake_backend_server[1])
        view = entry_serving({"*": backend}, "Qwen/Qwen3-8B")
        assert view is not None
        response = await view.open(STREAM_BODY)
        await backend.retire()  # SIGHUP changed the "*" entry
        open_while_streaming = not backend.client.is_closed
        await view.release(response)
        return open_while_streaming, backend.client.is_closed

    assert asyncio.run(run()) == (True, True)


def test_a_reload_keeps_the_catch_all_pool_for_a_request_still_connecting(fake_backend_server, fake):
    fake.hold_headers = True

    async def run() -> tuple[bool, int]:
        backend = catch_all_backend(fake_backend_server[1])
        view = entry_serving({"*": backend}, "Qwen/Qwen3-8B")
        assert view is not None
        opening = asyncio.create_task(view.open(STREAM_BODY))
        await asyncio.to_thread(fake.held.wait, 10)
        await backend.retire()
        closed_early = backend.client.is_closed
        fake.release()
        response = await opening
        await view.release(response)
        return closed_early, response.status

    assert asyncio.run(run()) == (False, 200)
