"""Streamed Responses: a turn's parser events rendered as the Responses
API's server-sent events.

`response.created` and `response.in_progress` open the stream; each output
item (reasoning, message, function or custom tool call) opens with
`response.output_item.added`, streams its deltas and closes with
`response.output_item.done` carrying the complete item; the stream ends
with `response.completed` (`response.incomplete` when cut at the token
limit) holding every item and the usage, or `response.failed`. A stored
response is written before that last event (docs/state.md); a stream the
client leaves is stored `incomplete` (reason `client_disconnected`). A call the
end of output cut (the token limit, a broken stream) is done with status
`incomplete` and the arguments written so far, and gets no
`function_call_arguments.done`: a client that runs calls when they are done
never runs a half-written one. Every event has its `sequence_number`. Only the first choice is rendered (the
Responses API has one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing

import orjson
from starlette.background import BackgroundTask

from gateway.api.responses_request import Tools
from gateway.api.responses_shapes import (
    ResponseEnvelope,
    call_item,
    custom_input,
    message_item,
    new_id,
    output_text,
    reasoning_item,
)
from gateway.api.responses_state import Memory
from gateway.api.sse import EventStream
from gateway.api.turns import Answer, Turn, TurnStream, UsageUpdate
from gateway.ops.errors import ApiError
from parsers import CallArgs, CallEnd, CallStart, Content, Event, Reasoning


class _Item:
    """The output item being streamed, and the framing of its deltas."""

    __slots__ = ("kind", "id", "index", "parts", "name", "call_id", "custom", "delta_head", "call_index")

    def __init__(
        self, kind: str, index: int, name: str = "", custom: bool = False, call_id: str = "", call_index: int = -1
    ) -> None:
        self.kind = kind
        self.id = new_id({"reasoning": "rs", "message": "msg", "call": "ctc" if custom else "fc"}[kind])
        self.index = index
        self.parts: list[str] = []
        self.name = name
        self.call_id = call_id
        self.custom = custom
        self.delta_head = b""
        self.call_index = call_index  # a call's index among the turn's calls


_DELTA_TYPES = {
    "reasoning": "response.reasoning_summary_text.delta",
    "message": "response.output_text.delta",
    "call": "response.function_call_arguments.delta",
}
_DELTA_PLACE = {
    "reasoning": ',"summary_index":0',
    "message": ',"content_index":0,"logprobs":[]',
    "call": "",
}


class ResponseEvents:
    """The events of one streamed response; `call_id(name, index)` names
    each call (the turn's `ParsePlan.call_id`)."""

    def __init__(self, envelope: ResponseEnvelope, tools: Tools, call_id: Callable[[str, int], str]) -> None:
        self._envelope = envelope
        self._tools = tools
        self._call_id = call_id
        self._sequence = 0
        self._output: list[dict] = []
        self._item: _Item | None = None
        self._calls: dict[int, _Item] = {}
        self._cut: set[int] = set()  # the calls the end of output cut
        self.finish_reason: str | None = None

    def event(self, payload: dict) -> bytes:
        kind = payload["type"]
        payload["sequence_number"] = self._sequence
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"

    def opening(self) -> list[bytes]:
        response = self._envelope.in_progress()
        return [
            self.event({"type": "response.created", "response": response}),
            self.event({"type": "response.in_progress", "response": response}),
        ]

    def render(self, events: list[Event], out: list[bytes], cut_calls: frozenset[int] = frozenset()) -> None:
        self._cut.update(cut_calls)
        for event in events:
            if type(event) is Content:
                self._delta("message", event.text, out)
            elif type(event) is Reasoning:
                self._delta("reasoning", event.text, out)
            elif type(event) is CallStart:
                self._close(self._item, out)
                self._item = None
                custom = event.name in self._tools.custom
                call_id = self._call_id(event.name, event.index)
                item = self._calls[event.index] = _Item(
                    "call", len(self._output), event.name, custom, call_id, event.index
                )
                self._open(item, out)
            elif type(event) is CallArgs:
                args_item = self._calls.get(event.index)
                if args_item is not None:
                    self._append(args_item, event.text, out)
            elif type(event) is CallEnd:
                self._close(self._calls.pop(event.index, None), out)

    def _delta(self, kind: str, text: str, out: list[bytes]) -> None:
        item = self._item
        if item is None or item.kind != kind:
            self._close(item, out)
            item = self._item = _Item(kind, len(self._output))
            self._open(item, out)
        self._append(item, text, out)

    def _append(self, item: _Item, text: str, out: list[bytes]) -> None:
        item.parts.append(text)
        if item.custom:
            return  # the input inside the JSON arguments is sent whole, when the call is done
        out.append(item.delta_head + orjson.dumps(text) + b',"sequence_number":%d}\n\n' % self._sequence)
        self._sequence += 1

    def _open(self, item: _Item, out: list[bytes]) -> None:
        self._output.append({})  # its place; the complete item lands here when it closes
        if item.kind == "reasoning":
            added = {"id": item.id, "type": "reasoning", "summary": []}
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
                    {"type": "response.content_part.added", **place, "content_index": 0, "part": output_text("")}
                )
            )
        head = orjson.dumps({"type": _DELTA_TYPES[item.kind], **place})[:-1].decode() + _DELTA_PLACE[item.kind]
        item.delta_head = b"event: " + _DELTA_TYPES[item.kind].encode() + b"\ndata: " + head.encode() + b',"delta":'

    def _close(self, item: _Item | None, out: list[bytes]) -> None:
        if item is None:
            return
        text = "".join(item.parts)
        place = {"item_id": item.id, "output_index": item.index}
        if item.kind == "reasoning":
            done = reasoning_item(item.id, text)
            out.append(
                self.event({"type": "response.reasoning_summary_text.done", **place, "summary_index": 0, "text": text})
            )
            part = {"type": "summary_text", "text": text}
            out.append(
                self.event({"type": "response.reasoning_summary_part.done", **place, "summary_index": 0, "part": part})
            )
        elif item.kind == "message":
            done = message_item(item.id, text)
            out.append(
                self.event(
                    {"type": "response.output_text.done", **place, "content_index": 0, "text": text, "logprobs": []}
                )
            )
            out.append(
                self.event(
                    {"type": "response.content_part.done", **place, "content_index": 0, "part": output_text(text)}
                )
            )
        elif item.call_index in self._cut:
            done = call_item(item.id, item.call_id, item.name, text, self._tools, status="incomplete")
        else:
            done = call_item(item.id, item.call_id, item.name, text, self._tools)
            if item.custom:
                value = custom_input(text)
                out.append(self.event({"type": "response.custom_tool_call_input.delta", **place, "delta": value}))
                out.append(self.event({"type": "response.custom_tool_call_input.done", **place, "input": value}))
            else:
                out.append(
                    self.event(
                        {"type": "response.function_call_arguments.done", **place, "name": item.name, "arguments": text}
                    )
                )
        self._output[item.index] = done
        out.append(self.event({"type": "response.output_item.done", "output_index": item.index, "item": done}))

    def finish(self, out: list[bytes]) -> None:
        """Close every item still open, in output order."""
        open_items = [*self._calls.values(), *([self._item] if self._item is not None else [])]
        self._calls.clear()
        self._item = None
        for item in sorted(open_items, key=lambda item: item.index):
            self._close(item, out)

    @property
    def output(self) -> list[dict]:
        """The complete items so far, in their order."""
        return self._output

    def ending(self, usage: dict | None, failure: dict | None) -> tuple[bytes, dict]:
        """The events closing the items still open, and the final response."""
        out: list[bytes] = []
        self.finish(out)
        if failure is not None:
            return b"".join(out), self._envelope.failed(self._output, failure, usage)
        return b"".join(out), self._envelope.finished(self._output, self.finish_reason, usage)

    def interrupted(self, usage: dict | None) -> dict:
        """The response so far of a stream its client left."""
        self.finish([])
        return self._envelope.interrupted(self._output, usage)

    def failed(self, failure: dict, usage: dict | None) -> dict:
        return self._envelope.failed(self._output, failure, usage)

    def final(self, response: dict) -> bytes:
        kind = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(response["status"])
        return self.event({"type": kind or "response.completed", "response": response})


async def _events(stream: TurnStream, events: ResponseEvents, memory: Memory | None) -> AsyncIterator[bytes]:
    usage = None
    try:
        for opening in events.opening():
            yield opening
        async with aclosing(aiter(stream)) as updates:
            async for update in updates:
                if type(update) is UsageUpdate:
                    usage = update.usage
                    continue
                if update.choice != 0:
                    continue
                out: list[bytes] = []
                events.render(update.events, out, update.cut_calls)
                if update.finish_reason is not None:
                    events.finish_reason = update.finish_reason
                    events.finish(out)
                if out:
                    yield b"".join(out)
    except BaseException:  # the client left (cancelled, or the generator closed)
        if memory is not None:
            memory.keep_later(events.interrupted(usage))
        raise
    failure = stream.failure.body if stream.failure is not None else None
    closing, response = events.ending(usage, failure)
    if memory is not None:
        try:
            await memory.keep(response)  # before the final event: a client that reads it can chain at once
        except ApiError as error:
            response = events.failed(error.body, usage)
    yield closing + events.final(response)


def whole_response(answer: Answer, turn: Turn, envelope: ResponseEnvelope, tools: Tools) -> dict:
    """The non-streamed response: the first choice's items as a stream of
    the same events would complete them, in their order."""
    choice = answer.choices[0]
    events = ResponseEvents(envelope, tools, turn.plan.call_id)
    out: list[bytes] = []
    events.render(choice.events, out, choice.cut_calls)
    events.finish(out)
    return envelope.finished(events.output, choice.finish_reason, answer.usage)


async def stream_response(
    turn: Turn, envelope: ResponseEnvelope, tools: Tools, memory: Memory | None = None
) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as Responses events; with `memory`, the final
    response is stored before its event is sent."""
    stream = await turn.stream()
    events = ResponseEvents(envelope, tools, turn.plan.call_id)
    return EventStream(_events(stream, events, memory), background=BackgroundTask(stream.release))
