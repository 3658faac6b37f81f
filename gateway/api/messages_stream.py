"""Parser events as Anthropic Messages output: the streamed events (every
frame with its `event:` line) and the non-streamed `message` object.

A stream is `message_start`, a `ping`, then per content block
`content_block_start` / `content_block_delta`… / `content_block_stop`, then
`message_delta` (`stop_reason`, `usage`) and `message_stop`. Reasoning is a
`thinking` block (`thinking_delta`s, closed by a `signature_delta`), text a
`text` block (`text_delta`s), each tool call a `tool_use` block (id and
name first, then `input_json_delta` fragments whose concatenation is the
call's JSON input; the id is `toolu_…`, or the model family's own:
`ParsePlan.call_id`). A call the output cut (the token limit, a broken
stream) keeps its input written so far, closed into valid JSON
(parsers/core/json_close.py), streamed and not alike. A backend that fails
mid-stream ends it with an `error` event. Only the first choice is rendered
(Messages has no `n`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from functools import partial

import orjson

from gateway.api.anthropic_errors import from_api_error
from gateway.api.turns import Answer, Turn, TurnStream, TurnUpdate, UsageUpdate
from parsers import CallArgs, CallEnd, CallStart, Content, Event, Reasoning
from parsers.core.json_close import JsonCloser

SIGNATURE = "parsegate"  # thinking blocks are not signed; clients replay any opaque string
PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens"}


def message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def tool_use_ids(turn: Turn) -> Callable[[str, int], str]:
    """The turn's call ids, Anthropic's `toolu_…` where the model family
    has none of its own."""
    return partial(turn.plan.call_id, prefix="toolu_")


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


def frame(name: str, payload: dict) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _delta_prefix(index: int, kind: str, field: str) -> bytes:
    return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":' % (
        index,
        kind.encode(),
        field.encode(),
    )


class BlockWriter:
    """The content blocks of one streamed message, opened and closed as the
    parser events change kind; each block's delta envelope is encoded once.
    `call_id(name, index)` names each tool_use block."""

    __slots__ = ("call_id", "count", "kind", "prefix", "made_call", "closer")

    def __init__(self, call_id: Callable[[str, int], str]) -> None:
        self.call_id = call_id
        self.count = 0  # blocks opened so far
        self.kind: type[Event] | None = None  # the open block's event kind
        self.prefix = b""  # the open block's delta envelope
        self.made_call = False
        self.closer = JsonCloser()  # the open call's input, closed if the output cuts it

    def write(self, events: list[Event]) -> list[bytes]:
        out: list[bytes] = []
        run: list[str] = []  # the open block's delta text from this update
        for event in events:
            if type(event) is CallEnd:
                continue
            if type(event) is CallStart:
                self._end(run, out)
                self.made_call = True
                self.closer = JsonCloser()
                call_id = self.call_id(event.name, event.index)
                call: dict[str, object] = {"type": "tool_use", "id": call_id, "name": event.name, "input": {}}
                self._open(CallArgs, call, "input_json_delta", "partial_json", out)
                continue
            if not event.text:
                continue
            if type(event) is not self.kind:
                self._end(run, out)
                if type(event) is Content:
                    self._open(Content, {"type": "text", "text": ""}, "text_delta", "text", out)
                elif type(event) is Reasoning:
                    thinking = {"type": "thinking", "thinking": "", "signature": ""}
                    self._open(Reasoning, thinking, "thinking_delta", "thinking", out)
                else:  # arguments of a call whose block is closed: none are left open to take them
                    continue
            text = self.closer.feed(event.text) if type(event) is CallArgs else event.text
            if text:
                run.append(text)
        self._flush(run, out)
        return out

    def close(self) -> list[bytes]:
        out: list[bytes] = []
        self._end([], out)
        return out

    def _end(self, run: list[str], out: list[bytes]) -> None:
        """Send the open block's last text (a call's held or closing input) and close it."""
        if self.kind is CallArgs:
            ending = self.closer.close()
            if ending:
                run.append(ending)
        self._flush(run, out)
        self._close(out)

    def _open(self, kind: type[Event], block: dict, delta_type: str, field: str, out: list[bytes]) -> None:
        out.append(
            frame("content_block_start", {"type": "content_block_start", "index": self.count, "content_block": block})
        )
        self.kind = kind
        self.prefix = _delta_prefix(self.count, delta_type, field)
        self.count += 1

    def _flush(self, run: list[str], out: list[bytes]) -> None:
        if run:
            out.append(self.prefix + orjson.dumps("".join(run)) + b"}}\n\n")
            run.clear()

    def _close(self, out: list[bytes]) -> None:
        if self.kind is None:
            return
        index = self.count - 1
        if self.kind is Reasoning:
            delta = {"type": "signature_delta", "signature": SIGNATURE}
            out.append(frame("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(frame("content_block_stop", {"type": "content_block_stop", "index": index}))
        self.kind = None


async def message_events(stream: TurnStream, model: str) -> AsyncIterator[bytes]:
    """The Anthropic event stream of one streamed turn."""
    message: dict[str, object] = {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage_of(None),
    }
    yield frame("message_start", {"type": "message_start", "message": message})
    yield PING
    blocks = BlockWriter(tool_use_ids(stream.turn))
    finish: str | None = None
    stop_sequence: str | None = None
    usage: dict | None = None
    async for update in stream:
        if type(update) is TurnUpdate:
            if update.choice != 0:
                continue
            for event in blocks.write(update.events):
                yield event
            if update.finish_reason is not None:
                finish, stop_sequence = update.finish_reason, update.stop_sequence
        elif type(update) is UsageUpdate:
            usage = update.usage
    if stream.failure is not None:
        yield frame("error", from_api_error(stream.failure))
        return
    for event in blocks.close():
        yield event
    delta = {"stop_reason": stop_reason(finish, stop_sequence), "stop_sequence": stop_sequence}
    yield frame("message_delta", {"type": "message_delta", "delta": delta, "usage": usage_of(usage)})
    yield b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


class BlockCollector(BlockWriter):
    """The content blocks a stream of the same events would carry, as the
    non-streamed message's `content`: one decision path for both."""

    __slots__ = ("blocks", "texts")

    def __init__(self, call_id: Callable[[str, int], str]) -> None:
        super().__init__(call_id)
        self.blocks: list[dict] = []
        self.texts: list[str] = []  # the open block's text so far

    def _open(self, kind: type[Event], block: dict, delta_type: str, field: str, out: list[bytes]) -> None:
        self.blocks.append(dict(block))
        self.kind = kind
        self.count += 1

    def _flush(self, run: list[str], out: list[bytes]) -> None:
        self.texts += run
        run.clear()

    def _close(self, out: list[bytes]) -> None:
        if self.kind is None:
            return
        block, text = self.blocks[-1], "".join(self.texts)
        if self.kind is Reasoning:
            block.update(thinking=text, signature=SIGNATURE)
        elif self.kind is Content:
            block["text"] = text
        else:
            block["input"] = _input(text)
        self.texts.clear()
        self.kind = None


def message_object(answer: Answer, turn: Turn) -> dict:
    """The non-streamed `message` for a turn's answer (its first choice),
    with the blocks a stream of the same turn would have, in their order."""
    choice = answer.choices[0]
    blocks = BlockCollector(tool_use_ids(turn))
    blocks.write(choice.events)
    blocks.close()
    return {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": blocks.blocks,
        "stop_reason": stop_reason(choice.finish_reason, choice.stop_sequence),
        "stop_sequence": choice.stop_sequence,
        "usage": usage_of(answer.usage),
    }


def _input(arguments: str) -> dict:
    """A call's JSON arguments as the tool_use input object ({} when they
    are not a JSON object: the parse outcome is in the metrics)."""
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
