"""Every error leaves the gateway in OpenAI's shape:
`{"error": {"message", "type", "param", "code"}}` — never a stack trace."""

from __future__ import annotations

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException

INVALID_REQUEST = "invalid_request_error"
UPSTREAM_ERROR = "upstream_error"


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

    def response(self) -> Response:
        return Response(
            orjson.dumps(self.body), status_code=self.status, media_type="application/json", headers=self.headers
        )


# Starlette types every handler as taking any Exception; it calls each only
# with the class it was added for.
async def _on_api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error.response()


async def _on_http_exception(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    code = "not_found" if error.status_code == 404 else None
    kind = INVALID_REQUEST if error.status_code < 500 else "server_error"
    api_error = ApiError(error.status_code, str(error.detail), type=kind, code=code)
    response = api_error.response()
    response.headers.update(error.headers or {})
    return response


async def _on_unexpected(request: Request, error: Exception) -> Response:
    # Starlette's ServerErrorMiddleware logs the traceback; the client sees none.
    return ApiError(500, "internal error in the gateway", type="server_error").response()


def install_error_handlers(app: FastAPI) -> None:
    """Answer ApiError, HTTP errors (unknown route, wrong method) and
    anything unexpected with OpenAI's error body."""
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(HTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)
