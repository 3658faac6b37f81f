"""Parser events as Anthropic Messages output: the streamed events (every
frame with its `event:` line) and the non-streamed `message` object.

A stream is `message_start` (its usage's `input_tokens` an estimate of
the prompt, one token per four characters of it as sent upstream: the
rendered prompt in template mode; the backend's own count comes in
`message_delta`), a `ping`, then per content block
`content_block_start` / `content_block_delta`… / `content_block_stop`, then
`message_delta` (`stop_reason`, `usage`, and `context_management`'s
`applied_edits` when the request asked for edits) and `message_stop`. Reasoning is a
`thinking` block (`thinking_delta`s, closed by a `signature_delta`), text a
`text` block (`text_delta`s), each tool call a `tool_use` block (id and
name first, then `input_json_delta` fragments whose concatenation is the
call's JSON input; the id is `toolu_…`, or the model family's own
(`ParsePlan.call_id`), encoded where Anthropic's id pattern refuses it:
messages_ids.py). A call the output cut (the token limit, a broken
stream) keeps its input written so far, closed into valid JSON
(parsers/core/json_close.py), streamed and not alike. A backend that fails
mid-stream ends it with an `error` event. Only the first choice is rendered
(Messages has no `n`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial

import orjson

from gateway.api.errors import from_api_error
from gateway.api.messages_ids import encode_call_id
from gateway.api.segments import TEXT, Segmenter
from gateway.api.sse import EventStream
from gateway.api.sse_frames import Envelope, named_event
from gateway.api.turns import Answer, Turn, TurnStream, TurnUpdate, UsageUpdate
from gateway.ops.ids import new_id
from parsers import CallArgs, Content, Event, Reasoning
from parsers.core.json_close import JsonCloser

SIGNATURE = "parsegate"  # thinking blocks are not signed; clients replay any opaque string
PING = named_event("ping", {"type": "ping"})
MESSAGE_STOP = named_event("message_stop", {"type": "message_stop"})
_STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens"}


def tool_use_ids(turn: Turn) -> Callable[[str, int], str]:
    """The turn's call ids as Messages ids: Anthropic's `toolu_…` where the
    model family has none of its own, its own encoded where Anthropic's
    pattern refuses them (`functions.NAME:N`)."""
    call_id = partial(turn.plan.call_id, prefix="toolu_")
    return lambda name, index: encode_call_id(call_id(name, index))


def stop_reason(finish_reason: str | None, stop_sequence: str | None = None) -> str:
    """Anthropic's stop reason for the turn's OpenAI finish reason (and the
    stop string it ended on, if any)."""
    if stop_sequence is not None:
        return "stop_sequence"
    return _STOP_REASONS.get(finish_reason or "stop", "end_turn")


def usage_of(usage: dict | None) -> dict:
    """Anthropic usage for the backend's OpenAI usage (checked in turns.py;
    zeros when absent). Anthropic's `input_tokens` are the uncached ones."""
    usage = usage or {}
    prompt = usage.get("prompt_tokens") or 0
    cached = min((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0, prompt)
    return {
        "input_tokens": prompt - cached,
        "output_tokens": usage.get("completion_tokens") or 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


class MessageBlocks:
    """A `Segmenter` sink: the content blocks of one message, one open at
    a time (their calls close when text comes). A call's
    input goes through a `JsonCloser`, so that a cut one still ends as
    valid JSON. `call_id(name, index)` names each tool_use block. The
    streamed sink frames each block's events; this one, the collector,
    builds the non-streamed message's `content`."""

    __slots__ = ("call_id", "kind", "closer", "blocks", "texts")

    def __init__(self, call_id: Callable[[str, int], str]) -> None:
        self.call_id = call_id
        self.kind: type[Event] | None = None  # the open block's event kind
        self.closer = JsonCloser()  # the open call's input, closed if the output cuts it
        self.blocks: list[dict] = []
        self.texts: list[str] = []  # the open block's text so far

    def open_text(self, kind: type[Event]) -> None:
        if kind is Content:
            self._open(kind, {"type": "text", "text": ""}, "text_delta", "text")
        else:
            self._open(kind, {"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", "thinking")

    def open_call(self, index: int, name: str) -> None:
        self.closer = JsonCloser()
        block = {"type": "tool_use", "id": self.call_id(name, index), "name": name, "input": {}}
        self._open(CallArgs, block, "input_json_delta", "partial_json")

    def write(self, block: int, text: str) -> None:
        if block != TEXT:
            text = self.closer.feed(text)
        if text:
            self._emit(text)

    def close_text(self, cut: bool) -> None:
        self._close()
        self.kind = None

    def close_call(self, index: int, cut: bool) -> None:
        ending = self.closer.close()
        if ending:
            self._emit(ending)
        self._close()
        self.kind = None

    def _open(self, kind: type[Event], block: dict, delta_type: str, field: str) -> None:
        self.kind = kind
        self.blocks.append(block)

    def _emit(self, text: str) -> None:
        self.texts.append(text)

    def _close(self) -> None:
        block, text = self.blocks[-1], "".join(self.texts)
        if self.kind is Reasoning:
            block.update(thinking=text, signature=SIGNATURE)
        elif self.kind is Content:
            block["text"] = text
        else:
            block["input"] = _input(text)
        self.texts.clear()


class StreamedBlocks(MessageBlocks):
    """The content blocks' events, framed into `out`; each block's delta
    envelope is encoded once."""

    __slots__ = ("out", "count", "head", "tail")

    def __init__(self, call_id: Callable[[str, int], str]) -> None:
        super().__init__(call_id)
        self.out: list[bytes] = []
        self.count = 0  # blocks opened so far
        self.head = self.tail = b""  # the open block's delta framing (sse_frames.Envelope)

    def _open(self, kind: type[Event], block: dict, delta_type: str, field: str) -> None:
        self.kind = kind
        start = {"type": "content_block_start", "index": self.count, "content_block": block}
        self.out.append(named_event("content_block_start", start))
        delta = {"type": "content_block_delta", "index": self.count, "delta": {"type": delta_type, field: None}}
        envelope = Envelope("content_block_delta", delta)
        self.head, self.tail = envelope.head, envelope.tail
        self.count += 1

    def _emit(self, text: str) -> None:
        self.out.append(self.head + orjson.dumps(text) + self.tail)

    def _close(self) -> None:
        index = self.count - 1
        if self.kind is Reasoning:
            delta = {"type": "signature_delta", "signature": SIGNATURE}
            self.out.append(
                named_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        self.out.append(named_event("content_block_stop", {"type": "content_block_stop", "index": index}))

    def sent(self) -> bytes:
        """The events framed since the last call, as one piece."""
        events = b"".join(self.out)
        self.out.clear()
        return events


async def message_events(
    stream: TurnStream, model: str, input_tokens: int, applied: list[dict] | None, out: EventStream
) -> None:
    """The Anthropic event stream of one streamed turn (`input_tokens`: the
    prompt's, estimated; `applied`: the context edits applied, if asked)."""
    message: dict[str, object] = {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage_of(None), "input_tokens": input_tokens},
    }
    await out.send(named_event("message_start", {"type": "message_start", "message": message}) + PING)
    blocks = StreamedBlocks(tool_use_ids(stream.turn))
    segments = Segmenter(blocks, calls_stay_open=False)
    finish: str | None = None
    stop_sequence: str | None = None
    usage: dict | None = None

    def deliver(batch: list[TurnUpdate | UsageUpdate]) -> asyncio.Future[None] | None:
        nonlocal finish, stop_sequence, usage
        for update in batch:
            if type(update) is TurnUpdate:
                if update.choice != 0:
                    continue
                segments.feed(update.events, update.cut_calls)
                if update.finish_reason is not None:
                    finish, stop_sequence = update.finish_reason, update.stop_sequence
            elif type(update) is UsageUpdate:
                usage = update.usage
        return out.write(blocks.sent()) if blocks.out else None  # one write per piece of the backend's stream

    await stream.run(deliver)
    if stream.failure is not None:
        await out.send(named_event("error", from_api_error(stream.failure)))
        return
    segments.finish()
    delta = {"stop_reason": stop_reason(finish, stop_sequence), "stop_sequence": stop_sequence}
    ending = {"type": "message_delta", "delta": delta, "usage": usage_of(usage), **context_of(applied)}
    await out.send(blocks.sent() + named_event("message_delta", ending) + MESSAGE_STOP)


def context_of(applied: list[dict] | None) -> dict:
    """The reply's `context_management` (the edits applied), when the request asked for edits."""
    return {"context_management": {"applied_edits": applied}} if applied is not None else {}


def message_object(answer: Answer, turn: Turn, applied: list[dict] | None = None) -> dict:
    """The non-streamed `message` for a turn's answer (its first choice),
    with the blocks a stream of the same turn would have, in their order."""
    choice = answer.choices[0]
    blocks = MessageBlocks(tool_use_ids(turn))
    segments = Segmenter(blocks, calls_stay_open=False)
    segments.feed(choice.events, choice.cut_calls)
    segments.finish()
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": blocks.blocks,
        "stop_reason": stop_reason(choice.finish_reason, choice.stop_sequence),
        "stop_sequence": choice.stop_sequence,
        "usage": usage_of(answer.usage),
        **context_of(applied),
    }


def _input(arguments: str) -> dict:
    """A call's JSON arguments as the tool_use input object ({} when they
    are not a JSON object: the parse outcome is in the metrics)."""
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
