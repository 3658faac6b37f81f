"""schemathesis over the gateway's own OpenAPI description: requests that
fit the schema and requests that break it get an answer below 500, and
every error is OpenAI's error body (Anthropic's on /v1/messages). Bounded, deterministic examples."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

OPERATIONS = [
    ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"),
    ("/v1/responses", "POST"),
    ("/v1/messages", "POST"),
    ("/v1/messages/count_tokens", "POST"),
    ("/v1/models", "GET"),
    ("/v1/responses", "POST"),
    ("/health", "GET"),
    ("/metrics", "GET"),
    ("/v1/responses/compact", "POST"),
    ("/v1/responses/{response_id}", "GET"),
    ("/v1/responses/{response_id}", "DELETE"),
    ("/v1/responses/{response_id}/input_items", "GET"),
    ("/v1/responses/{response_id}/cancel", "POST"),
    ("/v1/conversations", "POST"),
    ("/v1/conversations/{conversation_id}", "GET"),
    ("/v1/conversations/{conversation_id}", "POST"),
    ("/v1/conversations/{conversation_id}", "DELETE"),
    ("/v1/conversations/{conversation_id}/items", "GET"),
    ("/v1/conversations/{conversation_id}/items", "POST"),
    ("/v1/conversations/{conversation_id}/items/{item_id}", "GET"),
    ("/v1/conversations/{conversation_id}/items/{item_id}", "DELETE"),
]
CHAT_EXAMPLES = 40  # per mode; the GET routes take no input, a few calls each
FUZZED = [
    ("/v1/chat/completions", "POST", GenerationMode.POSITIVE, CHAT_EXAMPLES),
    ("/v1/chat/completions", "POST", GenerationMode.NEGATIVE, CHAT_EXAMPLES),
    ("/v1/completions", "POST", GenerationMode.NEGATIVE, 10),
    ("/v1/responses", "POST", GenerationMode.POSITIVE, CHAT_EXAMPLES),
    ("/v1/responses", "POST", GenerationMode.NEGATIVE, CHAT_EXAMPLES),
    ("/v1/messages", "POST", GenerationMode.POSITIVE, CHAT_EXAMPLES),
    ("/v1/messages", "POST", GenerationMode.NEGATIVE, CHAT_EXAMPLES),
    *((path, method, GenerationMode.POSITIVE, 3) for path, method in OPERATIONS[1:]),
]
SERVED_MODELS = ["qwen3", "plain", "kimi", "gpt-oss"]  # from the test config; random names get 404


@pytest.fixture(scope="module")
def gateway_schema(gateway_url):
    return schemathesis.openapi.from_url(f"{gateway_url}/openapi.json")


def test_the_schema_describes_every_route(gateway_schema):
    described = {
        (path, method.upper()) for path, methods in gateway_schema.raw_schema["paths"].items() for method in methods
    }
    assert described == set(OPERATIONS)
    body = gateway_schema.raw_schema["paths"]["/v1/chat/completions"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["required"] == ["model", "messages"]


@pytest.mark.slow  # 3 to 5 s each
@pytest.mark.parametrize("path, method, mode, examples", FUZZED)
def test_any_request_gets_an_answer_below_500(gateway_schema, fake, path, method, mode, examples):
    operation = gateway_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode), served=st.sampled_from([None, *SERVED_MODELS]))
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_below_500(case, served):
        if served and isinstance(case.body, dict) and "model" in case.body:
            case.body["model"] = served
        response = case.call(timeout=10)
        statuses.add(response.status_code)
        if response.status_code < 400:
            answered.append(case.body)  # named if a check below fails
        assert response.status_code < 500, (case.body, response.status_code, response.text[:500])
        if response.status_code >= 400 and path.startswith("/v1/messages"):
            assert response.json()["type"] == "error" and set(response.json()["error"]) == {"type", "message"}
        elif response.status_code >= 400:
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}

    statuses: set[int] = set()
    answered: list[object] = []
    answers_below_500()
    if (path, mode) == ("/v1/chat/completions", GenerationMode.POSITIVE):
        assert 200 in statuses, f"no fuzzed request reached a backend: {statuses}"
    if (path, mode) == ("/v1/chat/completions", GenerationMode.NEGATIVE):
        assert statuses == {400}, (statuses, answered)
