"""The OpenAI Responses API, `POST /v1/responses`: the request read and
turned into the internal chat request (responses_request.py), what it
continues recalled from the store (responses_state.py), its turn, and the
turn's parser events rendered as the Responses API's server-sent events or
as one whole `response`. The WebSocket transport (responses_socket.py)
makes its events with the same producer, framed as WebSocket messages.

Streamed Responses: a turn's parser events rendered as the Responses
API's server-sent events.

`response.created` and `response.in_progress` open the stream; each output
item (reasoning, message, function or custom tool call) opens with
`response.output_item.added`, streams its deltas and closes with
`response.output_item.done` carrying the complete item; the stream ends
with `response.completed` (`response.incomplete` when cut at the token
limit) holding every item and the usage, or `response.failed`. A stored
response is written before that last event (docs/state.md); a stream the
client leaves is stored `incomplete` (reason `client_disconnected`). An item
the end of output cut (the token limit, a broken stream, the client leaving)
is done with status `incomplete` and what was written so far; a call is cut
only while it is being written (one the backend parsed and moved on from is
complete). A cut call gets no `function_call_arguments.done`: a client that
runs calls when they are done never runs a half-written one.
Every event has its `sequence_number`. Only the first choice is rendered (the
Responses API has one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Protocol

import orjson
from fastapi import Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from gateway.api.compaction import asks_compaction, compacted
from gateway.api.disconnect import unless_client_leaves
from gateway.api.limits import read_body
from gateway.api.offload import converted, item_bound
from gateway.api.responses_background import background_state, start_background
from gateway.api.responses_request import chat_request, read_responses_fields
from gateway.api.responses_shapes import (
    NOTHING_INCLUDED,
    Included,
    ResponseObject,
    call_item,
    custom_input,
    included,
    message_item,
    output_text,
    reasoning_item,
    token_logprobs,
)
from gateway.api.responses_state import ResponseState, load_state, with_referred
from gateway.api.responses_tools import Tools
from gateway.api.segments import TEXT, Segmenter
from gateway.api.sse import EventStream
from gateway.api.sse_frames import Envelope, named_event
from gateway.api.turns import CUT_REASON, Answer, Turn, TurnStream, TurnUpdate, UsageUpdate, chat_turn
from gateway.ops.errors import ApiError
from gateway.ops.ids import UNGUESSABLE, new_id
from gateway.ops.json_body import json_response
from parsers import Content, Event


class _Item:
    """The output item being streamed, and the framing of its deltas."""

    __slots__ = ("kind", "id", "index", "parts", "name", "call_id", "custom", "delta", "logprobs")

    def __init__(self, kind: str, index: int, name: str = "", custom: bool = False, call_id: str = "") -> None:
        self.kind = kind
        self.id = new_id(
            {"reasoning": "rs_", "message": "msg_", "call": "ctc_" if custom else "fc_"}[kind], UNGUESSABLE
        )
        self.index = index
        self.parts: list[str] = []
        self.name = name
        self.call_id = call_id
        self.custom = custom
        self.delta: Envelope | None = None  # None: a custom call's input, sent whole when it is done
        self.logprobs: list[dict] = []  # a message's, when asked with `include`


_DELTA_TYPES = {
    "reasoning": "response.reasoning_summary_text.delta",
    "message": "response.output_text.delta",
    "call": "response.function_call_arguments.delta",
}
_DELTA_PLACE: dict[str, dict[str, object]] = {
    "reasoning": {"summary_index": 0},
    "message": {"content_index": 0, "logprobs": []},
    "call": {},
}


# the event that ends a stream, by the response's status (the Responses API has no
# `response.cancelled`: a cancelled background response ends as one cut short)
_FINAL_EVENTS = {"failed": "response.failed", "incomplete": "response.incomplete", "cancelled": "response.incomplete"}


class ResponseItems:
    """A `Segmenter` sink: the complete output items of one response, in
    their order; `call_id(name, index)` names each call (the turn's
    `ParsePlan.call_id`). The streamed sink (`ResponseEvents`) frames each
    item's events too; this one, the collector, builds a non-streamed
    response's `output`. `include` says what the items carry besides
    (a reasoning item's sealed text, a message's logprobs: the logprobs
    given to `logprobs` since its last text, those of the tokens before it
    included)."""

    def __init__(self, tools: Tools, call_id: Callable[[str, int], str], include: Included = NOTHING_INCLUDED) -> None:
        self._tools = tools
        self._call_id = call_id
        self._include = include
        self._logprobs: list[dict] = []  # the tokens' logprobs not yet given to a message
        self._output: list[dict] = []
        self._items: dict[int, _Item] = {}  # the open items: calls by index, the reasoning or message at TEXT
        self.segments = Segmenter(self, calls_stay_open=True)

    def open_text(self, kind: type[Event]) -> None:
        self._items[TEXT] = self._open(_Item("message" if kind is Content else "reasoning", len(self._output)))

    def open_call(self, index: int, name: str) -> None:
        custom = name in self._tools.custom
        self._items[index] = self._open(_Item("call", len(self._output), name, custom, self._call_id(name, index)))

    def logprobs(self, chat_logprobs: object) -> None:
        """The logprobs of the backend's tokens that come next (its chat `logprobs`), when `include` asks for them."""
        if self._include.logprobs:
            self._logprobs += token_logprobs(chat_logprobs)

    def _taken_logprobs(self, item: _Item) -> list[dict]:
        """The logprobs a message's text just written takes."""
        taken, self._logprobs = self._logprobs, []
        item.logprobs += taken
        return taken

    def write(self, block: int, text: str) -> None:
        item = self._items[block]
        item.parts.append(text)
        if item.kind == "message":
            self._taken_logprobs(item)

    def close_text(self, cut: bool) -> None:
        self._close(self._items.pop(TEXT), cut)

    def close_call(self, index: int, cut: bool) -> None:
        self._close(self._items.pop(index), cut)

    def _open(self, item: _Item) -> _Item:
        self._output.append({})  # its place; the complete item lands here when it closes
        return item

    def _close(self, item: _Item, cut: bool) -> None:
        text = "".join(item.parts)
        status = "incomplete" if cut else "completed"
        if item.kind == "reasoning":
            done = reasoning_item(item.id, text, status, self._include.reasoning_seal)
        elif item.kind == "message":
            done = message_item(item.id, text, status, self._logprobs_of(item))
        elif cut:
            done = call_item(item.id, item.call_id, item.name, text, self._tools, status)
        else:
            done = call_item(item.id, item.call_id, item.name, text, self._tools)
        self._output[item.index] = done
        self._closed(item, text, done, cut)

    def _logprobs_of(self, item: _Item) -> list[dict] | None:
        return item.logprobs if self._include.logprobs else None

    def _closed(self, item: _Item, text: str, done: dict, cut: bool) -> None:
        """What closing `item` says besides its place in the output (the events a stream sends)."""

    @property
    def output(self) -> list[dict]:
        """The complete items so far, in their order."""
        return self._output


class ResponseEvents(ResponseItems):
    """The events of one response, framed into `out` as its items open,
    grow and close, around the items `ResponseItems` builds: each a
    server-sent event, or (`sse=False`) its JSON alone, one WebSocket
    message (responses_socket.py)."""

    def __init__(
        self,
        response_object: ResponseObject,
        tools: Tools,
        call_id: Callable[[str, int], str],
        include: Included = NOTHING_INCLUDED,
        sse: bool = True,
    ) -> None:
        super().__init__(tools, call_id, include)
        self._response = response_object
        self._sequence = 0
        self._sse = sse
        self.out: list[bytes] = []
        self.finish_reason: str | None = None
        self.queued = False  # a background response's stream opens with `response.queued`

    @property
    def response_object(self) -> ResponseObject:
        return self._response

    def event(self, payload: dict) -> bytes:
        payload["sequence_number"] = self._sequence
        self._sequence += 1
        return named_event(payload["type"], payload) if self._sse else orjson.dumps(payload)

    def opening(self) -> list[bytes]:
        response = self._response.in_progress()
        queued = [self.event({"type": "response.queued", "response": self._response.queued()})] if self.queued else []
        return [
            *queued,
            self.event({"type": "response.created", "response": response}),
            self.event({"type": "response.in_progress", "response": response}),
        ]

    def write(self, block: int, text: str) -> None:
        item = self._items[block]
        item.parts.append(text)
        if item.kind == "message" and self._logprobs:  # a delta that carries its tokens' logprobs, framed whole
            place = {"item_id": item.id, "output_index": item.index, "content_index": 0}
            logprobs = self._taken_logprobs(item)
            self.out.append(self.event({"type": _DELTA_TYPES["message"], **place, "delta": text, "logprobs": logprobs}))
        elif item.delta is not None:
            self.out.append(item.delta.head + orjson.dumps(text) + item.delta.tail % self._sequence)
            self._sequence += 1

    def _open(self, item: _Item) -> _Item:
        out = self.out
        super()._open(item)
        if item.kind == "reasoning":
            added = reasoning_item(item.id, "", status="in_progress")
        elif item.kind == "message":
            added = message_item(item.id, "", status="in_progress")
        else:
            added = call_item(item.id, item.call_id, item.name, "", self._tools, status="in_progress")
        out.append(self.event({"type": "response.output_item.added", "output_index": item.index, "item": added}))
        place = {"item_id": item.id, "output_index": item.index}
        if item.kind == "reasoning":
            part = {"type": "summary_text", "text": ""}
            out.append(
                self.event({"type": "response.reasoning_summary_part.added", **place, "summary_index": 0, "part": part})
            )
        elif item.kind == "message":
            out.append(
                self.event(
                    {
                        "type": "response.content_part.added",
                        **place,
                        "content_index": 0,
                        "part": output_text("", self._logprobs_of(item)),
                    }
                )
            )
        if not item.custom:
            delta = {"type": _DELTA_TYPES[item.kind], **place, **_DELTA_PLACE[item.kind], "delta": None}
            after = b',"sequence_number":%d'
            item.delta = Envelope(_DELTA_TYPES[item.kind], delta, after=after, sse=self._sse)
        return item

    def _closed(self, item: _Item, text: str, done: dict, cut: bool) -> None:
        out = self.out
        place = {"item_id": item.id, "output_index": item.index}
        if item.kind == "reasoning":
            out.append(
                self.event({"type": "response.reasoning_summary_text.done", **place, "summary_index": 0, "text": text})
            )
            part = {"type": "summary_text", "text": text}
            out.append(
                self.event({"type": "response.reasoning_summary_part.done", **place, "summary_index": 0, "part": part})
            )
        elif item.kind == "message":
            out.append(
                self.event(
                    {
                        "type": "response.output_text.done",
                        **place,
                        "content_index": 0,
                        "text": text,
                        "logprobs": item.logprobs,
                    }
                )
            )
            part = output_text(text, self._logprobs_of(item))
            out.append(self.event({"type": "response.content_part.done", **place, "content_index": 0, "part": part}))
        elif not cut and item.custom:
            value = custom_input(text)
            out.append(self.event({"type": "response.custom_tool_call_input.delta", **place, "delta": value}))
            out.append(self.event({"type": "response.custom_tool_call_input.done", **place, "input": value}))
        elif not cut:
            out.append(
                self.event(
                    {"type": "response.function_call_arguments.done", **place, "name": item.name, "arguments": text}
                )
            )
        out.append(self.event({"type": "response.output_item.done", "output_index": item.index, "item": done}))

    def sent(self) -> list[bytes]:
        """The events framed since the last call."""
        events, self.out = self.out, []
        return events

    def ending(self, usage: dict | None, failure: dict | None) -> tuple[list[bytes], dict]:
        """The events closing the items still open (cut, after a failure), and the final response."""
        self.segments.finish(cut=failure is not None)
        if failure is not None:
            return self.sent(), self._response.failed(self._output, failure, usage)
        return self.sent(), self._response.finished(self._output, self.finish_reason, usage)

    def interrupted(self, usage: dict | None, open_calls: frozenset[int]) -> dict:
        """The response so far of a stream its client left: its open text
        cut, and the calls still being written (`open_calls`)."""
        self.segments.finish(cut=True, cut_calls=open_calls)
        self.out.clear()  # nobody reads them now
        return self._response.interrupted(self._output, usage)

    def failed(self, failure: dict, usage: dict | None) -> dict:
        return self._response.failed(self._output, failure, usage)

    def final(self, response: dict) -> bytes:
        kind = _FINAL_EVENTS.get(response["status"])
        return self.event({"type": kind or "response.completed", "response": response})


class EventWriter(Protocol):
    """A transport's writer of framed events: `send` from the producer's
    own task, `write` from the backend's callback (`None` once written, or
    the future of a write the client's flow control holds)."""

    async def send(self, events: list[bytes]) -> None: ...

    def write(self, events: list[bytes]) -> asyncio.Future[None] | None: ...


class _SseWriter:
    """The events of one batch as one piece of a `text/event-stream`."""

    __slots__ = ("_out",)

    def __init__(self, out: EventStream) -> None:
        self._out = out

    async def send(self, events: list[bytes]) -> None:
        await self._out.send(b"".join(events))

    def write(self, events: list[bytes]) -> asyncio.Future[None] | None:
        return self._out.write(b"".join(events))


async def _sse_events(
    stream: TurnStream, events: ResponseEvents, state: ResponseState | None, out: EventStream
) -> None:
    await produce_events(stream, events, state, _SseWriter(out))


async def produce_events(
    stream: TurnStream, events: ResponseEvents, state: ResponseState | None, out: EventWriter
) -> dict:
    """Relay the turn's stream as `events`, written to `out` (one writer
    a transport: SSE, WebSocket); with `state`, the final response is
    stored before its event is written. The final response."""
    usage = None

    def deliver(batch: list[TurnUpdate | UsageUpdate]) -> asyncio.Future[None] | None:
        nonlocal usage
        for update in batch:
            if type(update) is UsageUpdate:
                usage = update.usage
                continue
            if update.choice != 0:
                continue
            if update.logprobs is not None:
                events.logprobs(update.logprobs)
            events.segments.feed(update.events, update.cut_calls)
            if update.finish_reason is not None:
                events.finish_reason = update.finish_reason
                events.segments.finish(cut=update.finish_reason == CUT_REASON)
        return out.write(events.sent()) if events.out else None  # one write per piece of the backend's stream

    try:
        await out.send(events.opening())
        await stream.run(deliver)
    except BaseException:  # the client left (cancelled), or could not be written to
        if state is not None:
            state.save_later(events.interrupted(usage, stream.open_calls(0)))
        raise
    failure = stream.failure.body if stream.failure is not None else None
    closing, response = events.ending(usage, failure)
    if state is not None:
        try:
            response = await state.save(response)  # before the final event: a client that reads it can chain at once
        except ApiError as error:
            response = events.failed(error.body, usage)
    closing.append(events.final(response))
    await out.send(closing)
    return response


def whole_response(
    answer: Answer, turn: Turn, response_object: ResponseObject, tools: Tools, include: Included = NOTHING_INCLUDED
) -> dict:
    """The non-streamed response: the first choice's items as a stream of
    the same events would complete them, in their order."""
    choice = answer.choices[0]
    items = ResponseItems(tools, turn.plan.call_id, include)
    items.logprobs(choice.logprobs)
    items.segments.feed(choice.events, choice.cut_calls)
    items.segments.finish(cut=choice.finish_reason == CUT_REASON)
    return response_object.finished(items.output, choice.finish_reason, answer.usage)


async def stream_response(
    turn: Turn,
    response_object: ResponseObject,
    tools: Tools,
    state: ResponseState | None = None,
    include: Included = NOTHING_INCLUDED,
) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as Responses events; with `state`, the final
    response is stored before its event is sent."""
    stream = await turn.stream()
    events = ResponseEvents(response_object, tools, turn.plan.call_id, include)
    return EventStream(partial(_sse_events, stream, events, state), background=BackgroundTask(stream.release))


async def responses(request: Request) -> Response:
    server = request.app.state.config.server
    body = await read_body(request, server.max_body_bytes)
    raw, asked = await converted(request, len(body), read_responses_fields, body, item_bound(request, "input"))
    compacting = asks_compaction(asked.input)
    if compacting and asked.background:
        raise ApiError(
            400, "a compaction_trigger is answered while you wait: send it without background", param="background"
        )
    state = await load_state(request, asked)
    if asked.background:
        state = background_state(request, state)
    asked = with_referred(asked, state)
    history = state.history if state is not None else []
    size = None if history else len(body)  # a history is as long as the chain it continues
    conversed = asked.model_copy(update={"input": asked.input[:-1]}) if compacting else asked
    if asked.background:  # run streamed, so that a cancelled run keeps what it wrote
        conversed = conversed.model_copy(update={"stream": True})
    payload, chat, tools = await converted(request, size, chat_request, conversed, raw, history, request.app.state.seal)
    if state is None:
        response_object = ResponseObject(asked, raw)
    else:
        response_object = ResponseObject(asked, raw, stored=state.keeps, conversation=state.conversation)
    if compacting:
        return await compacted(request, payload, chat, response_object, state)
    turn = await chat_turn(request, payload, chat, raw)
    if state is not None:
        state.routed(turn.serving.route)
    include = included(asked, request.app.state.seal)
    if state is not None and asked.background:
        events = ResponseEvents(response_object, tools, turn.plan.call_id, include)
        return await start_background(request, produce_events, turn, events, state, bool(asked.stream))
    if chat.stream:
        return await unless_client_leaves(request, stream_response(turn, response_object, tools, state, include))
    answer = await unless_client_leaves(request, turn.answer())
    response = whole_response(answer, turn, response_object, tools, include)
    if state is not None:
        response = await state.save(response)
    return json_response(response)
