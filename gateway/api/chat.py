"""OpenAI chat completions, `POST /v1/chat/completions`: the request read
and checked, its turn, and the turn's parser events rendered as OpenAI
shapes, streamed as `chat.completion.chunk` events or whole as one
`chat.completion`.

Streamed, per upstream chunk and choice at most one chunk goes out (plus
the finish chunk); this runs once per upstream chunk, so it stays plain:
dicts and orjson, no pydantic, and each chunk's envelope is encoded once
per request (sse_frames.Envelope). A stream the backend cuts short still sends
what the parsers held, then ends with an OpenAI error event before
`[DONE]`. Not streamed, the turn reads the whole message as the streamed
deltas would be read, so the two paths cannot drift.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

import orjson
from fastapi import Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from gateway.api.disconnect import unless_client_leaves
from gateway.api.limits import read_body
from gateway.api.offload import converted, item_bound
from gateway.api.request import read_request
from gateway.api.sse import EventStream
from gateway.api.sse_frames import DONE, HOLE, Envelope, data_event, pieces_around
from gateway.api.turns import Answer, ChoiceAnswer, Turn, TurnStream, TurnUpdate, UsageUpdate, chat_turn
from gateway.ops.ids import new_id
from gateway.ops.json_body import json_response
from parsers import CallArgs, CallStart, Content, Event, Reasoning

CONTENT_KEYS = ("content",)


class ChunkEncoder:
    """Encodes the chunks of one streamed completion; the shared envelope
    (id, object, created, model) is serialised once."""

    def __init__(self, model: str) -> None:
        envelope = {"id": new_id("chatcmpl-", 32), "object": "chat.completion.chunk", "created": int(time.time())}
        envelope["model"] = model
        choice = Envelope(None, {**envelope, "choices": [None]})
        self._head, self._tail = choice.head, choice.tail
        self._usage = Envelope(None, {**envelope, "choices": [], "usage": None})
        self._text_pieces: dict[tuple[int, tuple[str, ...]], list[bytes]] = {}

    def text(self, index: int, keys: tuple[str, ...], text: str) -> bytes:
        """The chunk of a delta that is one text in `keys` (`content`, or
        the reasoning's fields), framed from pieces made once per choice and
        keys: the same bytes as `choice(index, {key: text for key in keys})`."""
        pieces = self._text_pieces.get((index, keys))
        if pieces is None:
            body = {"index": index, "delta": dict.fromkeys(keys, HOLE), "logprobs": None, "finish_reason": None}
            pieces = pieces_around(body)
            pieces[0] = self._head + pieces[0]
            pieces[-1] += self._tail
            self._text_pieces[(index, keys)] = pieces
        return orjson.dumps(text).join(pieces)

    def choice(
        self, index: int, delta: dict, reason: str | None = None, logprobs: object = None, extra: dict | None = None
    ) -> bytes:
        body = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": reason}
        if extra:
            body.update(extra)
        return self._head + orjson.dumps(body) + self._tail

    def usage(self, usage: dict) -> bytes:
        return self._usage.head + orjson.dumps(usage) + self._usage.tail


class ChoiceStream:
    """One streamed choice's chat deltas, and what it has sent so far."""

    __slots__ = ("call_id", "reasoning_keys", "role_sent")

    def __init__(
        self, call_id: Callable[[str, int], str], reasoning_keys: tuple[str, ...] = ("reasoning_content",)
    ) -> None:
        self.call_id = call_id
        self.reasoning_keys = reasoning_keys
        self.role_sent = False

    def delta(self, events: list[Event]) -> dict:
        """One OpenAI delta for a chunk's events; empty when there is
        nothing to say (except the choice's first delta, which carries the role)."""
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[dict] = []
        for event in events:
            if type(event) is Content:
                content.append(event.text)
            elif type(event) is Reasoning:
                reasoning.append(event.text)
            elif type(event) is CallStart:
                function = {"name": event.name, "arguments": ""}
                calls.append(
                    {
                        "index": event.index,
                        "id": self.call_id(event.name, event.index),
                        "type": "function",
                        "function": function,
                    }
                )
            elif type(event) is CallArgs:
                if calls and calls[-1]["index"] == event.index:
                    calls[-1]["function"]["arguments"] += event.text
                else:
                    calls.append({"index": event.index, "function": {"arguments": event.text}})
        delta: dict = {}
        if not self.role_sent:
            self.role_sent = True
            delta["role"] = "assistant"
            if not content and not reasoning and not calls:
                delta["content"] = ""
        if content:
            delta["content"] = "".join(content)
        if reasoning:
            text = "".join(reasoning)
            for key in self.reasoning_keys:
                delta[key] = text
        if calls:
            delta["tool_calls"] = calls
        return delta


def ask_for_usage(payload: dict) -> bool:
    """Whether the client asked for the usage chunk; the backend is asked
    for it either way (in `payload`), so that every stream's tokens are
    counted (metrics, limits), and the chunk reaches the client only if it
    asked. A `stream_options` that is no object is left for the backend to refuse."""
    options = payload.get("stream_options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        return False
    asked = options.get("include_usage") is True
    payload["stream_options"] = {**options, "include_usage": True}
    return asked


async def _chunks(stream: TurnStream, encoder: ChunkEncoder, usage_asked: bool, out: EventStream) -> None:
    plan = stream.turn.plan
    choices: dict[int, ChoiceStream] = {}

    def deliver(batch: list[TurnUpdate | UsageUpdate]) -> asyncio.Future[None] | None:
        events: list[bytes] = []  # one write per piece of the backend's stream
        for update in batch:
            if type(update) is UsageUpdate:
                if usage_asked:
                    events.append(encoder.usage(update.usage))
                continue
            index = update.choice
            choice = choices.get(index)
            if choice is None:
                choice = choices[index] = ChoiceStream(plan.call_id, plan.reasoning_keys)
            if (
                len(update.events) == 1
                and update.finish_reason is None
                and update.logprobs is None
                and choice.role_sent
            ):
                event = update.events[0]  # the common delta, one piece of text: the short way
                if type(event) is Content:
                    events.append(encoder.text(index, CONTENT_KEYS, event.text))
                    continue
                if type(event) is Reasoning and choice.reasoning_keys:
                    events.append(encoder.text(index, choice.reasoning_keys, event.text))
                    continue
            delta = choice.delta(update.events)
            if delta or update.logprobs:
                events.append(encoder.choice(index, delta, logprobs=update.logprobs))
            if update.finish_reason is not None:
                events.append(encoder.choice(index, {}, update.finish_reason, extra=update.unmet))
        return out.write(b"".join(events)) if events else None

    await stream.run(deliver)
    if stream.failure is not None:
        await out.send(data_event(stream.failure.body))
    await out.send(DONE)


async def stream_completion(turn: Turn, usage_asked: bool) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as parsed SSE chunks, the usage chunk only if `usage_asked`."""
    stream = await turn.stream()
    produce = partial(_chunks, stream, ChunkEncoder(turn.model), usage_asked)
    return EventStream(produce, background=BackgroundTask(stream.release))


def _choice(choice: ChoiceAnswer, turn: Turn) -> dict:
    plan, result = turn.plan, choice.result
    calls = [
        {"id": plan.call_id(name, index), "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(result.tool_calls)
    ]
    message: dict[str, object] = {"role": "assistant", "content": result.content or (None if calls else "")}
    for key in plan.reasoning_keys:
        message[key] = result.reasoning_content
    if calls:
        message["tool_calls"] = calls
    return {
        "index": choice.index,
        "message": message,
        "logprobs": choice.logprobs,
        "finish_reason": choice.finish_reason,
        **(choice.unmet or {}),
    }


def completion(answer: Answer, turn: Turn) -> dict:
    """The client's `chat.completion` for the turn's `answer`."""
    body = {
        "id": new_id("chatcmpl-", 32),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "choices": [_choice(choice, turn) for choice in answer.choices],
    }
    if answer.usage is not None:
        body["usage"] = answer.usage
    return body


async def chat_completions(request: Request) -> Response:
    server = request.app.state.config.server
    raw = await read_body(request, server.max_body_bytes)
    payload, chat = await converted(request, len(raw), read_request, raw, item_bound(request, "messages"))
    usage_asked = ask_for_usage(payload) if chat.stream else False
    turn = await chat_turn(request, payload, chat)
    if chat.stream:
        return await unless_client_leaves(request, stream_completion(turn, usage_asked))
    return json_response(completion(await unless_client_leaves(request, turn.answer()), turn))
