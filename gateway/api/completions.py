"""`POST /v1/completions`: the legacy text completions API, forwarded as a
plain pass-through. Same key check, model routing and errors as chat; the
model name is replaced by the backend's, `extra_body` is merged in, and the
backend's answer (JSON, or its SSE stream as it comes, decompressed) comes
back as sent (a stream's events re-framed whole). Nothing is parsed: a prompt has no roles, so there is no
reasoning or tool call to separate. The chat path's protections apply: the
body limit, the backend timeouts, the event stream's keep-alive pings and
send timeout (sse.py), and the request's metrics and log line.
"""

from __future__ import annotations

import asyncio
from functools import partial

import orjson
from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from starlette.background import BackgroundTask

from gateway.api.disconnect import unless_client_leaves
from gateway.api.key_limits import model_lease
from gateway.api.limits import read_body
from gateway.api.request import read_checked
from gateway.api.sse import EventStream
from gateway.api.sse_frames import DONE, data_event, relayed_event
from gateway.api.turns import DRAIN_SECONDS, model_not_found
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.observe import RequestRecord, stream_failure_kind, upstream_error_kind
from gateway.plan.request_fields import with_extra_body
from gateway.upstream.serving import Serving, entry_serving
from gateway.upstream.transport import UpstreamResponse


class CompletionRequest(BaseModel):
    """The fields of a text completion request the gateway relies on; the
    rest is forwarded as sent."""

    model_config = ConfigDict(strict=True)

    model: str
    stream: bool | None = None


async def forward_completion(serving: Serving, payload: dict, stream: bool, record: RequestRecord) -> Response:
    model = serving.model
    body = orjson.dumps({**with_extra_body(payload, model.extra_body), "model": model.upstream_model})
    response = await serving.open(body, "/completions")
    media_type = response.headers.get("content-type", "application/json")
    if stream:
        return EventStream(
            partial(_relay, response, serving, record), background=BackgroundTask(serving.release, response)
        )
    try:
        content = await serving.read(response)
    finally:
        await serving.release(response)
    return Response(content, status_code=response.status, media_type=media_type)


async def _relay(response: UpstreamResponse, serving: Serving, record: RequestRecord, out: EventStream) -> None:
    """The backend's events, each re-framed whole (`data: …` and a blank
    line), so that an error can never be glued to half a line, written as
    they arrive (the pushed body, upstream/body_push.py). A stream that
    breaks, goes quiet for `idle_timeout` or ends before `[DONE]` ends with
    an error event, then `[DONE]`."""
    done = False

    def relay(payloads: list[bytes]) -> asyncio.Future[None] | None:
        nonlocal done
        events: list[bytes] = []
        for payload in payloads:
            if payload == b"[DONE]":  # the last the push delivers
                done = True
                events.append(DONE)
                break
            events.append(relayed_event(payload))
        return out.write(b"".join(events)) if events else None

    try:
        await serving.push_payloads(response, relay, DRAIN_SECONDS)
        if done:
            return
        failure = ApiError(502, f"the backend for model {serving.name!r} ended the stream early", type=UPSTREAM_ERROR)
        record.upstream_failed("stream_cut")
    except ApiError as error:
        failure = error
        record.upstream_failed(stream_failure_kind(error))
    await out.send(data_event(failure.body) + DONE)


async def completions(request: Request) -> Response:
    server = request.app.state.config.server
    payload, checked = read_checked(await read_body(request, server.max_body_bytes), CompletionRequest)
    serving = entry_serving(request.app.state.backends, checked.model)
    if serving is None:
        raise model_not_found(checked.model)
    await model_lease(request, checked.model)
    record = request.state.record
    record.serves(serving.name, None, bool(checked.stream))
    try:
        return await unless_client_leaves(request, forward_completion(serving, payload, bool(checked.stream), record))
    except ApiError as error:
        record.upstream_failed(upstream_error_kind(error))
        raise
