"""Parser events to OpenAI chat shapes: completion ids and the
streamed `chat.completion.chunk` events of one choice.

This runs once per upstream chunk, so it stays plain: dicts and orjson,
no pydantic, and each chunk's envelope is encoded once per request
(sse.Envelope).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import orjson

from gateway.api.sse import Envelope
from parsers import CallArgs, CallStart, Content, Event, Reasoning


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


class ChunkEncoder:
    """Encodes the chunks of one streamed completion; the shared envelope
    (id, object, created, model) is serialised once."""

    def __init__(self, model: str) -> None:
        envelope = {"id": completion_id(), "object": "chat.completion.chunk", "created": int(time.time())}
        envelope["model"] = model
        choice = Envelope(None, {**envelope, "choices": [None]})
        self._head, self._tail = choice.head, choice.tail
        self._usage = Envelope(None, {**envelope, "choices": [], "usage": None})

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
