"""Bad input is a 400 naming the field, never a 5xx: malformed `tools`
schemas, `tool_choice` and `messages[*].tool_calls`, and deep nesting,
crossed with every parser that reads the tool schema and with a
guided-decoding dialect, streamed and not."""

from __future__ import annotations

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import tool_call_parser_names, tool_format

SCHEMA_GRAMMARS = {"tag_call", "channel_call", "ifm_call", "minimax_m3_call", "gemma4_call", "call_block"}


def _reads_schema(name: str) -> bool:
    body = tool_format(name).body
    return getattr(body, "func", body).__module__.rsplit(".", 1)[-1] in SCHEMA_GRAMMARS


SCHEMA_READERS = sorted({tool_format(name).name for name in tool_call_parser_names() if _reads_schema(name)})
GUIDED = "guided-qwen25"  # required/named tool_choice becomes a JSON-schema constraint
USER = {"role": "user", "content": "Hi"}


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    url = f"{fake_backend_server[1]}/v1"
    models = [{"name": name, "backend": {"url": url}, "tool_call_parser": name} for name in SCHEMA_READERS]
    models.append({"name": GUIDED, "backend": {"url": url}, "tool_call_parser": "qwen25", "guided_decoding": "vllm"})
    return serve(create_app(Config.model_validate({"models": models})))


def post(gateway: str, body: dict) -> tuple[int, str]:
    with httpx.stream("POST", f"{gateway}/v1/chat/completions", json=body, timeout=10) as response:
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
