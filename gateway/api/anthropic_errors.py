"""Errors in Anthropic's shape, for the Messages routes:
`{"type": "error", "error": {"type": ..., "message": ...}}`, with the
HTTP status the gateway chose and the error type Anthropic uses for it.

`AnthropicRoute` answers every `ApiError` and HTTP error its route raises
(its dependencies' included, so the API-key check too) in this shape.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response

from gateway.ops.errors import ApiError

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


def error_response(status: int, body: dict) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class AnthropicRoute(APIRoute):
    """A route whose errors leave in Anthropic's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as error:
                return error_response(error.status, from_api_error(error))
            except HTTPException as error:
                response = error_response(error.status_code, anthropic_error(error.status_code, str(error.detail)))
                response.headers.update(error.headers or {})
                return response

        return handle
