"""`backend.server` unset: the gateway asks the server what it is (vLLM's
and SGLang's `GET /v1/models` name their owner, llama.cpp answers
`GET /props`) on the first request that depends on it, once, and serves
every request as that kind of server, on scripted loopback backends that
answer as each would."""

from __future__ import annotations

import logging
from collections.abc import Callable

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_gateway_e2e import MESSAGES, ONE_CALL, TOOLS
from tests.scripted_backend import HANG, ScriptedBackend, chat_answer
from tests.sdk_clients import anthropic_client, openai_client

PASSWORD = "s3cret-detect"
ABSENT = object()


def listing(owner: str) -> tuple[int, dict]:
    """A `GET /v1/models` answer whose one model is owned by `owner`."""
    return 200, {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": owner}]}


LLAMACPP_PROPS = (200, {"default_generation_settings": {"n_ctx": 4096}, "build_info": "b6000", "total_slots": 1})
# kind -> its routes, its tool_choice sent for a request without one, the
# constraint field sent with "required" (its guided_decoding dialect)
KINDS = {
    "vllm": ({"/v1/models": listing("vllm")}, "none", "structured_outputs"),
    "sglang": ({"/v1/models": listing("sglang")}, ABSENT, "response_format"),
    "llamacpp": ({"/v1/models": listing("llamacpp"), "/props": LLAMACPP_PROPS}, "none", "grammar"),
    "llamacpp-props-only": ({"/props": LLAMACPP_PROPS}, "none", "grammar"),
    "other": ({"/v1/models": listing("openai")}, ABSENT, None),
}
CONSTRAINTS = {"structured_outputs", "response_format", "json_schema", "grammar"}


@pytest.fixture(scope="module")
def servers() -> dict[str, ScriptedBackend]:
    names = [*KINDS, "explicit", "no-tools", "json-answers", "late-loading", "late-hanging", "counted"]
    return {name: ScriptedBackend() for name in names}


@pytest.fixture(scope="module")
def gateway(serve, servers) -> str:
    def entry(name: str, **backend) -> dict:
        url = servers[name].url.replace("//", f"//parsegate:{PASSWORD}@")
        return {
            "name": name,
            "backend": {"url": f"{url}/v1", **backend},
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen25",
        }

    models = [entry(kind) for kind in KINDS]
    models += [entry("explicit", server="vllm"), entry("no-tools"), entry("json-answers"), entry("counted")]
    models += [entry(name, first_byte_timeout=0.3) for name in ("late-loading", "late-hanging")]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(scope="module")
def client(gateway: str) -> openai.OpenAI:
    return openai_client(gateway)


@pytest.fixture
def detections(caplog) -> Callable[[], list[str]]:
    """The log lines saying what a server was found to be, so far."""
    caplog.set_level(logging.INFO, logger="parsegate.backend")
    return lambda: [record.getMessage() for record in caplog.records if record.name == "parsegate.backend"]


def ask_with_tools(client: openai.OpenAI, model: str, **extra) -> None:
    client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, **extra)


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_server_is_found_once_and_served_as_such(client, servers, detections, kind):
    routes, choice, constraint = KINDS[kind]
    backend = servers[kind]
    backend.routes.update(routes)
    backend.routes["/v1/chat/completions"] = chat_answer(ONE_CALL)
    for _ in range(3):
        ask_with_tools(client, kind)
        assert backend.received("/v1/chat/completions")[-1].get("tool_choice", ABSENT) == choice
    ask_with_tools(client, kind, tool_choice="required")
    sent = backend.received("/v1/chat/completions")[-1]
    assert CONSTRAINTS & set(sent) == ({constraint} if constraint else set())
    assert backend.asked("/v1/models") == 1 and backend.asked("/props") == (kind in ("llamacpp-props-only", "other"))
    expected = kind.removesuffix("-props-only")
    [line] = detections()
    assert f"model {kind!r}" in line and f"is a {expected!r} server" in line
    assert f"parsegate:***@127.0.0.1:{backend.port}" in line and PASSWORD not in line


def test_an_explicit_server_is_never_asked(client, servers):
    backend = servers["explicit"]
    backend.routes["/v1/chat/completions"] = chat_answer(ONE_CALL)
    ask_with_tools(client, "explicit")
    assert [path for _, path, _, _ in backend.requests] == ["/v1/chat/completions"]
    assert backend.received("/v1/chat/completions")[0]["tool_choice"] == "none"


def test_a_request_without_tools_in_chat_mode_asks_nothing(client, servers):
    backend = servers["no-tools"]
    backend.routes["/v1/chat/completions"] = chat_answer("Hi.")
    client.chat.completions.create(model="no-tools", messages=MESSAGES)
    assert [path for _, path, _, _ in backend.requests] == ["/v1/chat/completions"]


def test_a_json_response_format_asks_the_kind_and_goes_behind_the_reasoning(client, servers):
    """Found to be vLLM, the server is sent the format as a structural tag
    that lets the model think first (test_reasoning_under_constraints.py)."""
    backend = servers["json-answers"]
    backend.routes["/v1/models"] = listing("vllm")
    backend.routes["/v1/chat/completions"] = chat_answer('<think>Easy.</think>{"a": 1}')
    answer = client.chat.completions.create(
        model="json-answers", messages=MESSAGES, response_format={"type": "json_object"}
    ).choices[0]
    assert (answer.message.reasoning_content, answer.message.content) == ("Easy.", '{"a": 1}')
    sent = backend.received("/v1/chat/completions")[-1]
    assert "response_format" not in sent and set(sent["structured_outputs"]) == {"structural_tag"}
    assert backend.asked("/v1/models") == 1


@pytest.mark.parametrize(
    ("model", "down"), [("late-loading", (503, {"error": {"message": "Loading model"}})), ("late-hanging", HANG)]
)
def test_a_server_that_cannot_answer_yet_is_asked_again_later(client, servers, detections, failure_clock, model, down):
    backend = servers[model]
    backend.routes["/v1/chat/completions"] = chat_answer(ONE_CALL)
    backend.routes["/v1/models"] = backend.routes["/props"] = down
    asked = []
    for _ in range(3):
        ask_with_tools(client, model)  # served as `other` meanwhile: the request's own tool_choice
        assert "tool_choice" not in backend.received("/v1/chat/completions")[-1]
        asked.append(backend.asked("/v1/models"))
    asked_while_down = asked[0]
    assert asked_while_down >= 1 and asked == [asked_while_down] * 3  # the failure kept: not asked by each request
    backend.routes["/v1/models"] = listing("vllm")
    failure_clock.pass_the_window()
    for _ in range(2):
        ask_with_tools(client, model)
        assert backend.received("/v1/chat/completions")[-1]["tool_choice"] == "none"
    assert backend.asked("/v1/models") == asked_while_down + 1
    first, found = detections()
    assert f"model {model!r}: cannot tell the server kind" in first and "is a 'vllm' server" in found


def test_count_tokens_asks_the_tokenizer_of_the_server_it_found(gateway, servers):
    backend = servers["counted"]
    backend.routes["/v1/models"] = listing("vllm")
    backend.routes["/tokenize"] = (200, {"count": 321, "max_model_len": 4096})
    claude = anthropic_client(gateway)
    for _ in range(2):
        assert claude.messages.count_tokens(model="counted", messages=MESSAGES).input_tokens == 321
    assert backend.asked("/v1/models") == 1 and backend.asked("/tokenize") == 2
