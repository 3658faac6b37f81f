"""Compaction (docs/agents.md#compaction): a Responses request whose last
input item is `compaction_trigger` (what Codex sends when its context
fills), or `POST /v1/responses/compact` (the older route), runs the
backend on one summarisation turn, the conversation so far followed by
the configured prompt (`server.compaction_prompt`), and answers exactly
one `compaction` item, the summary sealed (compaction_seal.py). The
Responses handler (responses.py) hands a triggered request to `compacted`;
`compact` serves the older route.
"""

from __future__ import annotations

import time

from fastapi import Request
from fastapi.responses import Response

from gateway.api.disconnect import unless_client_leaves
from gateway.api.limits import read_body
from gateway.api.offload import converted, item_bound
from gateway.api.request import ChatRequest
from gateway.api.responses_request import chat_request, read_responses_fields
from gateway.api.responses_shapes import ResponseObject, usage
from gateway.api.responses_state import ResponseState, load_state, with_referred
from gateway.api.sse import EventStream
from gateway.api.sse_frames import named_event
from gateway.api.turns import chat_turn
from gateway.ops.errors import ApiError
from gateway.ops.ids import UNGUESSABLE, new_id
from gateway.ops.json_body import json_response

TRIGGER = "compaction_trigger"
SUMMARY_PROMPT = (
    "Your context window is about to be compacted. Write a summary of the conversation so far that lets you "
    "continue the work without it: the user's goals and instructions, what has been done (files, commands, "
    "decisions and their reasons), what was learned, what is left to do and the very next step. Keep names, "
    "paths, identifiers and numbers exact. Answer with the summary only."
)


def asks_compaction(items: object) -> bool:
    """Whether a Responses input ends with `compaction_trigger` (a 400 when one sits elsewhere)."""
    if not isinstance(items, list):
        return False
    for index, item in enumerate(items[:-1]):
        if isinstance(item, dict) and item.get("type") == TRIGGER:
            message = f"input[{index}]: a compaction_trigger must be the last input item"
            raise ApiError(400, message, param=f"input[{index}]")
    return bool(items) and isinstance(items[-1], dict) and items[-1].get("type") == TRIGGER


def summarising(payload: dict, prompt: str | None) -> dict:
    """The chat payload of the summarisation turn: the conversation, the
    prompt as the user's last message, no tools, not streamed."""
    dropped = ("tools", "tool_choice", "parallel_tool_calls", "response_format", "stream", "stream_options")
    summary_turn = {key: value for key, value in payload.items() if key not in dropped}
    summary_turn["messages"] = [*payload["messages"], {"role": "user", "content": prompt or SUMMARY_PROMPT}]
    return summary_turn


async def compaction_item(request: Request, payload: dict, chat: ChatRequest) -> tuple[dict, dict | None, str | None]:
    """Run the summarisation turn: the `compaction` item, the backend's
    usage, and its finish reason."""
    server = request.app.state.config.server
    turn_payload = summarising(payload, server.compaction_prompt)
    summary_chat = chat.model_copy(update={"stream": False, "tools": None, "tool_choice": None})
    turn = await chat_turn(request, turn_payload, summary_chat)
    answer = await turn.answer()
    choice = answer.choices[0]
    # a thinking model's summary is its answer; where it wrote only reasoning (its
    # end marker never came), that reasoning is the summary rather than nothing
    summary = choice.result.content or choice.result.reasoning_content or ""
    sealed = request.app.state.seal.seal(summary)
    return (
        {"id": new_id("cmp_", UNGUESSABLE), "type": "compaction", "encrypted_content": sealed},
        answer.usage,
        choice.finish_reason,
    )


def compacted_response(item: dict, chat_usage: dict | None) -> dict:
    """`POST /v1/responses/compact`'s answer (the SDK's `CompactedResponse`)."""
    return {
        "id": new_id("resp_", UNGUESSABLE),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": [item],
        "usage": usage(chat_usage or {}),
    }


def compaction_events(response: dict) -> list[dict]:
    """A compaction response as the Responses events a streaming client
    reads (over SSE or the WebSocket): opened, the one item added and done,
    completed, numbered."""
    item = response["output"][0]
    in_progress = {**response, "status": "in_progress", "output": [], "usage": None}
    events = [
        {"type": "response.created", "response": in_progress},
        {"type": "response.in_progress", "response": in_progress},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def compaction_stream(response: dict) -> Response:
    """A compaction response as server-sent events."""
    framed = b"".join(named_event(event["type"], event) for event in compaction_events(response))

    async def produce(out: EventStream) -> None:
        await out.send(framed)

    return EventStream(produce)


async def compacted(
    request: Request, payload: dict, chat: ChatRequest, response_object: ResponseObject, state: ResponseState | None
) -> Response:
    """The answer to a Responses request whose input ends with
    `compaction_trigger` (`payload` and `chat` its conversation, the
    trigger left out): the one `compaction` item as a finished response,
    stored as any response is, streamed where the request asked."""
    item, chat_usage, finish_reason = await unless_client_leaves(request, compaction_item(request, payload, chat))
    response = response_object.finished([item], finish_reason, chat_usage)
    if state is not None:
        response = await state.save(response)
    return compaction_stream(response) if chat.stream else json_response(response)


async def compact(request: Request) -> Response:
    """`POST /v1/responses/compact`: the request's conversation (its input,
    after a `previous_response_id`'s chain) compacted into one `compaction`
    item; nothing is stored."""
    server = request.app.state.config.server
    body = await read_body(request, server.max_body_bytes)
    raw, asked = await converted(request, len(body), read_responses_fields, body, item_bound(request, "input"))
    asked = asked.model_copy(update={"store": False, "stream": False})
    state = await load_state(request, asked)
    asked = with_referred(asked, state)
    history = state.history if state is not None else []
    payload, chat, _ = await converted(request, None, chat_request, asked, raw, history, request.app.state.seal)
    item, chat_usage, _ = await unless_client_leaves(request, compaction_item(request, payload, chat))
    return json_response(compacted_response(item, chat_usage))
