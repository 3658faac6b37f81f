"""Every error leaves the gateway as a well-formed body, never a stack
trace: OpenAI's `{"error": {"message", "type", "param", "code"}}` unless
the surface the request came to has a shape of its own (the `shape` given
to `install_error_handlers`)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from gateway.ops.json_body import json_response

INVALID_REQUEST = "invalid_request_error"
UPSTREAM_ERROR = "upstream_error"
REQUEST_ID_HEADER = "x-request-id"


def error_body(
    message: str,
    *,
    type: str = INVALID_REQUEST,
    param: str | None = None,
    code: str | None = None,
) -> dict:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


class ApiError(Exception):
    """An error answered to the client with `status` and OpenAI's error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, type=type, param=param, code=code)
        self.headers = headers or {}
        self.backend_status: int | None = None  # the backend's own HTTP status, when this relays its error

    def response(self) -> Response:
        return json_response(self.body, self.status, self.headers)


ErrorShape = Callable[[Request, ApiError], Response]


def install_error_handlers(app: FastAPI, shape: ErrorShape) -> None:
    """Answer ApiError, HTTP errors (unknown route, wrong method) and
    anything unexpected in the `shape` of the request's surface."""

    # Starlette types every handler as taking any Exception; it calls each
    # only with the class it was added for.
    async def on_api_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, ApiError)
        return shape(request, error)

    async def on_http_exception(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        code = "not_found" if error.status_code == 404 else None
        kind = INVALID_REQUEST if error.status_code < 500 else "server_error"
        headers = dict(error.headers or {})
        return shape(request, ApiError(error.status_code, str(error.detail), type=kind, code=code, headers=headers))

    async def on_unexpected(request: Request, error: Exception) -> Response:
        # Starlette's ServerErrorMiddleware logs the traceback; the client sees none. It answers
        # outside every middleware, so the request id (ObserveMiddleware's record) is added here.
        headers = {REQUEST_ID_HEADER: request.state.record.request_id}
        return shape(request, ApiError(500, "internal error in the gateway", type="server_error", headers=headers))

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(HTTPException, on_http_exception)
    app.add_exception_handler(Exception, on_unexpected)
