"""The OpenAPI description of `POST /v1/chat/completions` (served at
`GET /openapi.json`). The handler reads the raw body itself, so FastAPI
cannot infer it: the body is `ChatRequest`'s JSON schema (the fields the
gateway checks; any other field is allowed and forwarded), inlined."""

from __future__ import annotations

from gateway.request import ChatRequest

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


def chat_request_schema() -> dict:
    schema = ChatRequest.model_json_schema()
    definitions = schema.pop("$defs", {})
    schema["properties"]["tool_choice"] = _TOOL_CHOICE
    return _inline(schema, definitions)


def chat_completions_openapi() -> dict:
    """`openapi_extra` for the chat completions route."""
    errors = {"content": {"application/json": {"schema": _ERROR}}}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": chat_request_schema()}}},
        "responses": {
            "200": {
                "description": "A `chat.completion`; with `stream: true`, SSE `chat.completion.chunk` events",
                "content": {"application/json": {}, "text/event-stream": {}},
            },
            "4XX": {"description": "The request cannot be served (OpenAI error body)", **errors},
            "5XX": {"description": "The backend failed (OpenAI error body)", **errors},
        },
    }
