"""The OpenAPI description of `POST /v1/chat/completions` and
`POST /v1/completions` (served at `GET /openapi.json`). The handlers read
the raw body themselves, so FastAPI cannot infer it: each body is its
request model's JSON schema (the fields the gateway checks; any other field
is allowed and forwarded), inlined."""

from __future__ import annotations

from pydantic import BaseModel

from gateway.api.completions import CompletionRequest
from gateway.api.request import ChatRequest
from gateway.api.responses_request import ResponsesRequest

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_TOOL_CHOICE = {
    "anyOf": [
        {"type": "null"},
        {"enum": ["none", "auto", "required"]},
        {
            "type": "object",
            "required": ["type", "function"],
            "properties": {
                "type": {"const": "function"},
                "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            },
        },
    ]
}


def _inline(node: object, definitions: dict) -> object:
    """`node` with every `{"$ref": "#/$defs/X"}` replaced by X's schema."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(definitions[node["$ref"].rsplit("/", 1)[1]], definitions)
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value, definitions) for value in node]
    return node


def _route_openapi(body_schema: dict, answer: str) -> dict:
    errors = {"content": {"application/json": {"schema": _ERROR}}}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": body_schema}}},
        "responses": {
            "200": {"description": answer, "content": {"application/json": {}, "text/event-stream": {}}},
            "4XX": {"description": "The request cannot be served (OpenAI error body)", **errors},
            "5XX": {"description": "The backend failed (OpenAI error body)", **errors},
        },
    }


def _schema(model: type[BaseModel]) -> dict:
    schema = model.model_json_schema()
    inlined = _inline(schema, schema.pop("$defs", {}))
    assert isinstance(inlined, dict), "an object's schema inlines to an object"
    return inlined


def chat_completions_openapi() -> dict:
    """`openapi_extra` for the chat completions route."""
    schema = _schema(ChatRequest)
    schema["properties"]["tool_choice"] = _TOOL_CHOICE
    return _route_openapi(schema, "A `chat.completion`; with `stream: true`, SSE `chat.completion.chunk` events")


def completions_openapi() -> dict:
    """`openapi_extra` for the text completions pass-through."""
    return _route_openapi(
        _schema(CompletionRequest), "The backend's `text_completion`, as it sent it (SSE with `stream: true`)"
    )


def responses_openapi() -> dict:
    """`openapi_extra` for the Responses API route."""
    return _route_openapi(
        _schema(ResponsesRequest),
        "A `response`; with `stream: true`, SSE Responses events ending in `response.completed`",
    )
