"""The Anthropic Messages surface (what Claude Code speaks):

    POST /v1/messages               a turn, streamed (SSE with `event:` lines) or not
    POST /v1/messages/count_tokens  `{"input_tokens": N}` (upstream/token_count.py)

The request becomes the internal chat request (messages_request.py), the
turn runs through the shared pipeline (turns.py), and its parser events
are rendered as Anthropic events (messages_stream.py). `?beta=true` and the
`anthropic-version` / `anthropic-beta` headers are accepted and change
nothing; the API key may come as `x-api-key` or a bearer token. Errors are
Anthropic-shaped (errors.py).
"""

from __future__ import annotations

import asyncio
from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from gateway.api.disconnect import unless_client_leaves
from gateway.api.limits import read_body
from gateway.api.messages_request import CountTokensRequest, MessagesRequest, read_messages_request
from gateway.api.messages_stream import PING, message_events, message_object
from gateway.api.offload import converted, item_bound
from gateway.api.sse import EventStream
from gateway.api.turns import Turn, chat_turn, serving_request
from gateway.ops.errors import ApiError
from gateway.ops.json_body import json_response
from gateway.upstream.token_count import count_prompt_tokens, count_rendered_tokens, estimate, estimate_rendered


async def prompt_tokens(request: Request, turn: Turn, payload: dict) -> int:
    """A stream's `message_start` input_tokens: counted by the server's
    tokenizer where the model's `backend.message_start_tokens` says so (the
    rendered prompt in template mode, else the messages and tools, as
    count_tokens counts them), else estimated."""
    if turn.serving.model.backend.message_start_tokens == "tokenizer":
        try:
            serving = await serving_request(request, turn.serving.name, needs_server_kind=True)
        except ApiError:  # the server's kind could not be asked: the stream goes on with the estimate
            serving = turn.serving
        if serving.model.chat_template is not None:
            return await count_rendered_tokens(serving, turn.body)
        return await count_prompt_tokens(serving, payload)
    return await converted(request, len(turn.body), prompt_estimate, turn, payload)


def prompt_estimate(turn: Turn, payload: dict) -> int:
    """The prompt's tokens, estimated (one per four characters) for a stream's
    `message_start`: the rendered prompt in template mode, else the chat
    request's messages and tools, as count_tokens estimates them (a large
    prompt's off the event loop: 3-8 ms for 1 MB)."""
    if turn.serving.model.chat_template is not None:
        return estimate_rendered(turn.body)
    return estimate(payload)


async def create_message(request: Request) -> Response:
    raw = await read_body(request, request.app.state.config.server.max_body_bytes)
    messages, payload, chat, applied = await converted(
        request, len(raw), read_messages_request, raw, MessagesRequest, item_bound(request, "messages")
    )
    turn = await chat_turn(request, payload, chat)
    if chat.stream:
        counting = asyncio.ensure_future(prompt_tokens(request, turn, payload))  # beside the backend's prefill
        try:
            stream = await unless_client_leaves(request, turn.stream())
        except BaseException:
            counting.cancel()
            raise
        try:
            input_tokens = await unless_client_leaves(request, counting)
        except BaseException:
            await stream.release()
            raise
        events = partial(message_events, stream, messages.model, input_tokens, applied)
        return EventStream(events, background=BackgroundTask(stream.release), ping=PING)
    return json_response(message_object(await unless_client_leaves(request, turn.answer()), turn, applied))


async def count_tokens(request: Request) -> Response:
    raw = await read_body(request, request.app.state.config.server.max_body_bytes)
    _, payload, chat, _ = await converted(
        request, len(raw), read_messages_request, raw, CountTokensRequest, item_bound(request, "messages")
    )
    serving = await serving_request(request, chat.model, needs_server_kind=True)
    return json_response({"input_tokens": await unless_client_leaves(request, count_prompt_tokens(serving, payload))})


def _described(checked: type[MessagesRequest]) -> dict:
    """The OpenAPI body of a route that reads its raw body itself."""
    schema = checked.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def add_messages_routes(v1: APIRouter) -> None:
    """`/messages` and `/messages/count_tokens` on the `/v1` router (its key check)."""
    v1.add_api_route("/messages", create_message, methods=["POST"], openapi_extra=_described(MessagesRequest))
    v1.add_api_route(
        "/messages/count_tokens", count_tokens, methods=["POST"], openapi_extra=_described(CountTokensRequest)
    )
