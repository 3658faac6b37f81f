"""Streamed completions: the backend's SSE chunks in, parsed chunks out.

Per upstream chunk and choice, the delta text goes through that choice's
pipeline and at most one chunk goes out (plus the finish chunk). A stream
the backend cuts short still flushes what the parsers hold, then ends with
an OpenAI error event before `[DONE]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import orjson
from starlette.background import BackgroundTask

from gateway.chunks import DONE, ChoiceStream, ChunkEncoder, finish_reason, sse_event
from gateway.errors import UPSTREAM_ERROR, error_body
from gateway.request import ParsePlan
from gateway.sse import EventStream, data_payloads
from gateway.upstream import Backend


class StreamTranslator:
    """Turns one request's upstream chunks into gateway SSE events."""

    def __init__(self, plan: ParsePlan, encoder: ChunkEncoder) -> None:
        self._plan = plan
        self._encoder = encoder
        self._choices: dict[int, ChoiceStream] = {}

    def translate(self, chunk: dict) -> list[bytes]:
        events: list[bytes] = []
        for choice in chunk.get("choices") or ():
            self._translate_choice(choice, events)
        usage = chunk.get("usage")
        if usage:
            events.append(self._encoder.usage(usage))
        return events

    def _translate_choice(self, choice: dict, out: list[bytes]) -> None:
        index = choice.get("index", 0)
        stream = self._choices.get(index)
        if stream is None:
            stream = self._choices[index] = ChoiceStream(self._plan.pipeline(), self._plan.call_id)
        if stream.finished:
            return
        text = (choice.get("delta") or {}).get("content")
        events = stream.pipeline.feed(text) if text else []
        reason = choice.get("finish_reason")
        if reason is not None:
            events = events + stream.finish()
        delta = stream.delta(events)
        logprobs = choice.get("logprobs")
        if delta or logprobs:
            out.append(self._encoder.choice(index, delta, logprobs=logprobs))
        if reason is not None:
            out.append(self._encoder.choice(index, {}, finish_reason(stream.made_call, reason)))

    def flush_unfinished(self) -> list[bytes]:
        """The backend stopped early: whatever unfinished choices still hold."""
        out = []
        for index, stream in self._choices.items():
            if not stream.finished:
                delta = stream.delta(stream.finish())
                if delta:
                    out.append(self._encoder.choice(index, delta))
        return out

    @property
    def complete(self) -> bool:
        """Every choice seen has finished (and at least one was seen)."""
        return bool(self._choices) and all(stream.finished for stream in self._choices.values())


async def _relay(response: httpx.Response, translator: StreamTranslator, backend: Backend) -> AsyncIterator[bytes]:
    failure: dict | None = None
    try:
        async for data in data_payloads(response):
            if data == b"[DONE]":
                break
            chunk = orjson.loads(data)
            if not isinstance(chunk, dict) or "error" in chunk:
                failure = _backend_error_event(chunk, backend)
                break
            for event in translator.translate(chunk):
                yield event
    except httpx.TransportError as error:
        failure = error_body(backend.failure_message(error), type=UPSTREAM_ERROR)
    except orjson.JSONDecodeError:
        failure = error_body(f"the backend for model {backend.name!r} sent a malformed chunk", type=UPSTREAM_ERROR)
    if failure is None and not translator.complete:
        failure = error_body(f"the backend for model {backend.name!r} ended the stream early", type=UPSTREAM_ERROR)
    for event in translator.flush_unfinished():
        yield event
    if failure is not None:
        yield sse_event(failure)
    yield DONE


def _backend_error_event(chunk: object, backend: Backend) -> dict:
    """The backend's own in-stream error, passed on when it is OpenAI-shaped."""
    if isinstance(chunk, dict) and isinstance(chunk.get("error"), dict):
        return {"error": chunk["error"]}
    return error_body(f"the backend for model {backend.name!r} reported an error", type=UPSTREAM_ERROR)


async def stream_completion(backend: Backend, body: bytes, plan: ParsePlan, model: str) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as parsed SSE chunks."""
    response = await backend.open(body)
    translator = StreamTranslator(plan, ChunkEncoder(model))
    return EventStream(_relay(response, translator, backend), background=BackgroundTask(response.aclose))
