"""A vLLM run without its own tool parser refuses tool_choice "auto" with a
400 that tells the user to turn that parser on, the opposite of what
parsegate needs. Every surface, streamed or not, answers it instead with a
502 in its own error shape that names the config key that fixes it
(`backend.server: vllm`), through the official SDKs."""

from __future__ import annotations

import anthropic
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import VLLM_AUTO_REFUSED, VLLM_AUTO_REFUSED_FLAT
from tests.gateway.test_gateway_e2e import MESSAGES, TOOLS
from tests.sdk_clients import anthropic_client, openai_client

VLLMS_ADVICE = VLLM_AUTO_REFUSED["error"]["message"]
RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]
ANTHROPIC_TOOLS = [{"name": tool["function"]["name"], "input_schema": tool["function"]["parameters"]} for tool in TOOLS]


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    """`qwen3` names no backend.server (as the shipped configs did);
    `own-parser` is a vLLM with parsegate's tool parser off."""
    url = f"{fake_backend_server[1]}/v1"
    models = [
        {"name": "qwen3", "backend": {"url": url}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"},
        {"name": "own-parser", "backend": {"url": url, "server": "vllm"}, "tool_call_parser": "none"},
    ]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(params=[VLLM_AUTO_REFUSED_FLAT, VLLM_AUTO_REFUSED], ids=["flat", "nested"])
def refusing(fake, request):
    """The fake backend answers vLLM's 400 body (before and since vLLM 0.10.2)."""
    fake.refuse_auto_tools = True
    fake.auto_refusal = request.param
    return fake


def chat(gateway: str, model: str, stream: bool) -> None:
    client = openai_client(gateway)
    client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, stream=stream)


def responses(gateway: str, model: str, stream: bool) -> None:
    client = openai_client(gateway)
    client.responses.create(model=model, input="Weather in Paris?", tools=RESPONSES_TOOLS, stream=stream)


def messages(gateway: str, model: str, stream: bool) -> None:
    client = anthropic_client(gateway)
    client.messages.create(model=model, max_tokens=64, messages=MESSAGES, tools=ANTHROPIC_TOOLS, stream=stream)


SURFACES = {"chat": (chat, openai.InternalServerError), "responses": (responses, openai.InternalServerError)}
SURFACES["messages"] = (messages, anthropic.InternalServerError)


def refusal_message(gateway: str, surface: str, model: str, stream: bool) -> str:
    """The error message of the surface's 502, checked to be in its own shape."""
    call, error_class = SURFACES[surface]
    with pytest.raises(error_class) as raised:
        call(gateway, model, stream)
    assert raised.value.status_code == 502
    body = raised.value.response.json()
    if surface == "messages":
        assert body["type"] == "error" and body["error"]["type"] == "api_error"
    else:
        assert body["error"]["type"] == "upstream_error" and body["error"]["code"] == "upstream_misconfigured"
    return body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_vllms_auto_tool_choice_refusal_names_backend_server(gateway, refusing, surface, stream):
    message = refusal_message(gateway, surface, "qwen3", stream)
    assert "'qwen3'" in message and "backend.server: vllm" in message and 'tool_choice "none"' in message
    assert VLLMS_ADVICE not in message


@pytest.mark.parametrize("surface", list(SURFACES))
def test_with_server_vllm_and_no_tool_parser_the_refusal_names_tool_call_parser(gateway, refusing, surface):
    message = refusal_message(gateway, surface, "own-parser", stream=False)
    assert "'own-parser'" in message and "tool_call_parser" in message and "backend.server" not in message
    assert refusing.last_body.get("tool_choice", "auto") == "auto"  # sent as the request came


def test_another_400_from_the_backend_is_relayed(gateway, fake):
    fake.error = (400, b'{"object": "error", "message": "max_tokens is too large", "type": "BadRequestError"}')
    with pytest.raises(openai.BadRequestError) as raised:
        chat(gateway, "qwen3", stream=False)
    assert raised.value.body["message"] == "max_tokens is too large"
