"""`POST /v1/completions`: the legacy text completions API, forwarded as a
plain pass-through. Same key check, model routing and errors as chat; the
model name is replaced by the backend's, `extra_body` is merged in, and the
backend's answer (JSON, or its SSE stream byte for byte) comes back as sent.
Nothing is parsed: a prompt has no roles, so there is no reasoning or tool
call to separate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import orjson
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict
from starlette.background import BackgroundTask

from gateway.chunks import DONE, sse_event
from gateway.errors import UPSTREAM_ERROR, error_body
from gateway.extra_body import with_extra_body
from gateway.upstream import Backend


class CompletionRequest(BaseModel):
    """The fields of a text completion request the gateway relies on; the
    rest is forwarded as sent."""

    model_config = ConfigDict(strict=True)

    model: str
    stream: bool | None = None


async def forward_completion(backend: Backend, payload: dict, stream: bool) -> Response:
    body = orjson.dumps({**with_extra_body(payload, backend.config.extra_body), "model": backend.upstream_model})
    response = await backend.open(body, "/completions")
    media_type = response.headers.get("content-type", "application/json")
    if stream:
        return StreamingResponse(
            _relay(response, backend), media_type=media_type, background=BackgroundTask(backend.release, response)
        )
    try:
        with backend.transport_errors():
            content = await response.aread()
    finally:
        await backend.release(response)
    return Response(content, status_code=response.status_code, media_type=media_type)


async def _relay(response: httpx.Response, backend: Backend) -> AsyncIterator[bytes]:
    """The backend's bytes as they come; a broken stream ends with an error event."""
    try:
        async for piece in response.aiter_raw():
            yield piece
    except httpx.TransportError as error:
        yield sse_event(error_body(backend.failure_message(error), type=UPSTREAM_ERROR))
        yield DONE
