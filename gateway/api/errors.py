"""Every surface's errors in its own shape. `surface_error` is the app's
one error renderer: a request to a Messages path (a 404 or 405 on one, the
concurrency limit's 429 and an unexpected 500 included) gets Anthropic's
shape, every other request OpenAI's (ops/errors.py). Headers the error
carries (a relayed `Retry-After`, `Allow`) go out with it.

Anthropic's shape is `{"type": "error", "error": {"type": ..., "message":
...}}`, with the HTTP status the gateway chose and the error type
Anthropic uses for it (https://docs.anthropic.com/en/api/errors).
"""

from __future__ import annotations

from fastapi import Request
from starlette.responses import Response

from gateway.ops.errors import ApiError
from gateway.ops.json_body import json_response

MESSAGES_PATH = "/v1/messages"
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return _TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def anthropic_error(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def from_api_error(error: ApiError) -> dict:
    return anthropic_error(error.status, str(error.body["error"].get("message") or error))


def is_messages_path(path: str) -> bool:
    return path == MESSAGES_PATH or path.startswith(MESSAGES_PATH + "/")


def surface_error(request: Request, error: ApiError) -> Response:
    """`error` in the shape of the surface `request` came to."""
    if not is_messages_path(request.url.path):
        return error.response()
    return json_response(from_api_error(error), error.status, error.headers)
