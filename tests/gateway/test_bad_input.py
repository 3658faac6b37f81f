"""Bad input is a 400 naming the field, never a 5xx: malformed `tools`
schemas, `tool_choice` and `messages[*].tool_calls`, and deep nesting,
crossed with every parser that reads the tool schema and with the
guided-decoding dialects, streamed and not, on chat and on both agent
surfaces (`/v1/responses` through the openai SDK, `/v1/messages` through
the anthropic SDK), which convert their request to chat's and go through
its check."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.api.request import MAX_NESTING
from gateway.app import create_app
from gateway.ops.config import Config
from parsers import tool_call_parser_names, tool_format
from tests.sdk_clients import anthropic_client, openai_client

SCHEMA_GRAMMARS = {"tag_call", "channel_call", "ifm_call", "minimax_m3_call", "gemma4_call", "call_block"}


def _reads_schema(name: str) -> bool:
    body = tool_format(name).body
    return getattr(body, "func", body).__module__.rsplit(".", 1)[-1] in SCHEMA_GRAMMARS


SCHEMA_READERS = sorted({tool_format(name).name for name in tool_call_parser_names() if _reads_schema(name)})
GUIDED = "guided-qwen25"  # required/named tool_choice becomes a JSON-schema constraint
GBNF = "gbnf-qwen25"  # ... or a llama.cpp grammar (gateway/plan/gbnf.py)
USER = {"role": "user", "content": "Hi"}


@pytest.fixture(scope="module")
def gateway(fake_backend_server) -> Iterator[TestClient]:
    """The gateway app in this process, its start-up and shutdown run: each
    request (hundreds per property test) goes to the app with no socket
    between, and an error in the app reaches the client as it would from a
    server, a 500 or a stream cut short, not raised here. The fake backend
    is the real server on loopback."""
    url = f"{fake_backend_server[1]}/v1"
    models = [{"name": name, "backend": {"url": url}, "tool_call_parser": name} for name in SCHEMA_READERS]
    models.append({"name": GUIDED, "backend": {"url": url}, "tool_call_parser": "qwen25", "guided_decoding": "vllm"})
    models.append({"name": GBNF, "backend": {"url": url}, "tool_call_parser": "qwen25", "guided_decoding": "llamacpp"})
    app = create_app(Config.model_validate({"models": models}))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def responses(gateway: TestClient) -> openai.OpenAI:
    return openai_client(str(gateway.base_url), http_client=gateway)


@pytest.fixture(scope="module")
def messages(gateway: TestClient) -> anthropic.Anthropic:
    return anthropic_client(str(gateway.base_url), http_client=gateway)


def post(gateway: TestClient, body: dict) -> tuple[int, str]:
    with gateway.stream("POST", "/v1/chat/completions", json=body) as response:
        return response.status_code, response.read().decode()


def tool(parameters: object) -> dict:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def nested(levels: int) -> object:
    value: object = "deep"
    for _ in range(levels):
        value = [value]
    return value


BAD_REQUESTS = [
    ("qwen3_coder", {"messages": [USER, {"role": "assistant", "tool_calls": 5}]}, "messages[1].tool_calls"),
    ("qwen3_coder", {"messages": [USER], "metadata": nested(300)}, "metadata"),
    ("qwen3_coder", {"messages": [USER, {"content": "no role"}]}, "messages[1].role"),  # found by a random-seed sweep
    ("qwen3_coder", {"messages": [{"role": 5, "content": "hi"}]}, "messages[0].role"),
    ("qwen3_coder", {"messages": [{"role": "user", "content": nested(300)}]}, "messages"),
    (GUIDED, {"messages": [USER], "tools": [tool([1])], "tool_choice": "required"}, "tools[0].function.parameters"),
    (
        GUIDED,
        {"messages": [USER], "tools": [tool({"$defs": 5})], "tool_choice": "required"},
        "tools[0].function.parameters.$defs",
    ),
    *(
        (parser, {"messages": [USER], "tools": [tool(parameters)]}, param)
        for parser in ("qwen3_coder", "glm45", "minimax-m2", "gemma4")
        for parameters, param in (
            ({"type": "object", "properties": [1]}, "tools[0].function.parameters.properties"),
            ({"type": 5}, "tools[0].function.parameters.type"),
            ({"properties": {"x": {"type": 5}}}, "tools[0].function.parameters.properties.x.type"),
        )
    ),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("model", "body", "param"), BAD_REQUESTS)
def test_bad_input_is_a_400_naming_the_field(gateway, fake, model, body, param, stream):
    status, text = post(gateway, {"model": model, "stream": stream, **body})
    assert status == 400, text
    error = orjson.loads(text)["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert fake.requests == []


def nested_objects(levels: int) -> object:
    value: object = "deep"
    for _ in range(levels):
        value = {"n": 1, "x": value}
    return value


@pytest.mark.parametrize("nest", [nested, nested_objects])
def test_nesting_is_refused_one_level_past_the_bound(gateway, fake, nest):
    """The request object is level 1, so `metadata` may hold MAX_NESTING - 1
    levels of arrays or objects; one more is a 400 naming it."""
    within = {"model": "qwen3_coder", "messages": [USER], "metadata": nest(MAX_NESTING - 1)}
    status, text = post(gateway, within)
    assert status == 200, text
    assert len(fake.requests) == 1
    status, text = post(gateway, {**within, "metadata": nest(MAX_NESTING)})
    assert status == 400, text
    assert orjson.loads(text)["error"]["param"] == "metadata"
    assert len(fake.requests) == 1


LEAVES = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "f", "#/$defs/x"])
JUNK = LEAVES | st.lists(LEAVES, max_size=2) | st.dictionaries(st.sampled_from(["x", "y"]), LEAVES, max_size=2)
TYPE_NAMES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "int", "str"])
KEYWORDS = ["type", "properties", "items", "anyOf", "oneOf", "allOf", "$defs", "$ref", "required", "enum"]


def _schema_of(children: st.SearchStrategy) -> st.SearchStrategy:
    value = JUNK | TYPE_NAMES | children | st.lists(children, max_size=2) | st.dictionaries(st.just("x"), children)
    return st.dictionaries(st.sampled_from(KEYWORDS), value, max_size=3)


SCHEMAS = st.recursive(
    st.dictionaries(st.sampled_from(KEYWORDS), JUNK | TYPE_NAMES, max_size=3), _schema_of, max_leaves=8
)
TOOLS = st.lists(st.builds(tool, SCHEMAS | JUNK), min_size=1, max_size=2) | JUNK
TOOL_CHOICES = st.sampled_from(
    [None, "auto", "required", "none", {"type": "function", "function": {"name": "f"}}, {"type": "function"}, 5]
)
CALLS = st.lists(st.fixed_dictionaries({"id": st.just("c1"), "type": st.just("function"), "function": JUNK}))
HISTORIES = st.lists(st.fixed_dictionaries({"role": st.just("assistant"), "tool_calls": CALLS | JUNK}), max_size=2)


@given(
    model=st.sampled_from([*SCHEMA_READERS, GUIDED]),
    stream=st.booleans(),
    tools=TOOLS,
    tool_choice=TOOL_CHOICES,
    history=HISTORIES,
)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_malformed_tool_shapes_never_get_a_5xx(gateway, fake, model, stream, tools, tool_choice, history):
    parser = "qwen25" if model == GUIDED else model
    fake.reset()
    fake.script(tool_format(parser).render_call("f", '{"x": "1", "y": [2]}'), chunk_size=3)
    body = {"model": model, "stream": stream, "messages": [USER, *history], "tools": tools}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    status, text = post(gateway, body)
    assert status in (200, 400), (body, status, text[:500])
    if status == 400:
        error = orjson.loads(text)["error"]
        assert error["param"].startswith(("tools", "tool_choice", "messages")), error
    elif stream:
        events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]" and not any('"error"' in event for event in events), text[-500:]


def _parser(model: str) -> str:
    return "qwen25" if model in (GUIDED, GBNF) else model


# (model, tool schema, Responses tool_choice, Messages tool_choice, where in the schema the fault is):
# the adversarial run's cases, each a 500 or a stream cut short once the model called the tool
AGENT_BAD_SCHEMAS = [
    *((GUIDED, schema, "required", {"type": "any"}, "") for schema in ("object", 5, [1])),
    (GUIDED, {"$defs": 5}, "required", {"type": "any"}, ".$defs"),
    (GBNF, {"type": 5}, "required", {"type": "any"}, ".type"),
    (GBNF, {"type": "object", "properties": [1]}, "required", {"type": "any"}, ".properties"),
    (GBNF, {"$ref": 5}, "required", {"type": "any"}, ".$ref"),
    (GBNF, {"type": "array", "prefixItems": 5}, "required", {"type": "any"}, ".prefixItems"),
    ("qwen3_coder", {"type": "object", "properties": [1]}, "auto", {"type": "auto"}, ".properties"),
    ("qwen3_coder", {"type": 5}, "auto", {"type": "auto"}, ".type"),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("model", "schema", "choice", "anthropic_choice", "fault"), AGENT_BAD_SCHEMAS)
def test_a_bad_parameters_schema_on_responses_is_a_400_naming_it(
    responses, fake, model, schema, choice, anthropic_choice, fault, stream
):
    fake.script(tool_format(_parser(model)).render_call("f", '{"x": "1"}'))
    tools = [{"type": "function", "name": "g"}, {"type": "function", "name": "f", "parameters": schema}]
    with pytest.raises(openai.BadRequestError) as raised:
        responses.responses.create(model=model, input="Hi", tools=tools, tool_choice=choice, stream=stream)
    error = raised.value.body
    assert error["param"] == f"tools[1].parameters{fault}" and error["type"] == "invalid_request_error"
    assert error["message"].startswith(f"tools[1].parameters{fault} must be")
    assert fake.requests == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("model", "schema", "openai_choice", "choice", "fault"), AGENT_BAD_SCHEMAS)
def test_a_bad_input_schema_on_messages_is_a_400_naming_it(
    messages, fake, model, schema, openai_choice, choice, fault, stream
):
    fake.script(tool_format(_parser(model)).render_call("f", '{"x": "1"}'))
    deferred = {"name": "later", "input_schema": {"type": "object"}, "defer_loading": True}  # not offered
    tools = [deferred, {"name": "f", "input_schema": schema}]
    with pytest.raises(anthropic.BadRequestError) as raised:
        messages.messages.create(
            model=model, max_tokens=50, messages=[USER], tools=tools, tool_choice=choice, stream=stream
        )
    assert raised.value.body["type"] == "error" and raised.value.body["error"]["type"] == "invalid_request_error"
    assert raised.value.body["error"]["message"].startswith(f"tools[1].input_schema{fault} must be")
    assert fake.requests == []


def test_count_tokens_checks_the_input_schema_too(messages, fake):
    with pytest.raises(anthropic.BadRequestError) as raised:
        messages.messages.count_tokens(model="qwen3_coder", messages=[USER], tools=[{"name": "f", "input_schema": 5}])
    assert raised.value.body["error"]["message"].startswith("tools[0].input_schema must be a JSON schema object")


def test_a_namespaced_tool_is_named_where_the_request_holds_it(responses, fake):
    bad = {"type": "function", "name": "f", "parameters": {"properties": [1]}}
    namespace = {"type": "namespace", "name": "files", "tools": [{"type": "function", "name": "g"}, bad]}
    with pytest.raises(openai.BadRequestError) as raised:
        responses.responses.create(model="qwen3_coder", input="Hi", extra_body={"tools": [namespace]})
    assert raised.value.body["param"] == "tools[0].tools[1].parameters.properties"


def _responses_body(tools: object, tool_choice: object) -> dict:
    body: dict = {"tools": tools}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    return body


RESPONSES_TOOLS = (
    st.lists(
        st.builds(lambda schema: {"type": "function", "name": "f", "parameters": schema}, SCHEMAS | JUNK),
        min_size=1,
        max_size=2,
    )
    | JUNK
)
RESPONSES_CHOICES = st.sampled_from(
    [None, "auto", "required", "none", {"type": "function", "name": "f"}, {"type": "function"}, 5]
)
MESSAGES_TOOLS = (
    st.lists(st.builds(lambda schema: {"name": "f", "input_schema": schema}, SCHEMAS | JUNK), min_size=1, max_size=2)
    | JUNK
)
MESSAGES_CHOICES = st.sampled_from(
    [None, {"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": "f"}, {"type": "tool"}, 5]
)


@given(
    model=st.sampled_from([*SCHEMA_READERS, GUIDED, GBNF]),
    stream=st.booleans(),
    tools=RESPONSES_TOOLS,
    tool_choice=RESPONSES_CHOICES,
)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_malformed_tools_on_responses_never_get_a_5xx(responses, fake, model, stream, tools, tool_choice):
    fake.reset()
    fake.script(tool_format(_parser(model)).render_call("f", '{"x": "1", "y": [2]}'), chunk_size=3)
    try:
        reply = responses.responses.create(
            model=model, input="Hi", stream=stream, extra_body=_responses_body(tools, tool_choice)
        )
    except openai.BadRequestError as error:
        assert error.body["param"].startswith(("tools", "tool_choice")), error.body
        return
    if stream:
        events = list(reply)
        assert events[-1].type == "response.completed", events[-1]
    else:
        assert reply.status == "completed"


@given(
    model=st.sampled_from([*SCHEMA_READERS, GUIDED, GBNF]),
    stream=st.booleans(),
    tools=MESSAGES_TOOLS,
    tool_choice=MESSAGES_CHOICES,
)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_malformed_tools_on_messages_never_get_a_5xx(messages, fake, model, stream, tools, tool_choice):
    fake.reset()
    fake.script(tool_format(_parser(model)).render_call("f", '{"x": "1", "y": [2]}'), chunk_size=3)
    body = {"tools": tools} if tool_choice is None else {"tools": tools, "tool_choice": tool_choice}
    try:
        reply = messages.messages.create(model=model, max_tokens=50, messages=[USER], stream=stream, extra_body=body)
        events = [event.type for event in reply] if stream else None
    except anthropic.BadRequestError as error:
        assert error.body["error"]["message"].startswith(("tools", "tool_choice")), error.body
        return
    if stream:
        assert events[0] == "message_start" and events[-1] == "message_stop", events
    else:
        assert reply.type == "message" and reply.stop_reason is not None
