"""Streamed completions: the backend's SSE chunks in, parsed chunks out.

Per upstream chunk and choice, the delta text goes through that choice's
pipeline and at most one chunk goes out (plus the finish chunk). A stream
the backend cuts short still flushes what the parsers hold, then ends with
an OpenAI error event before `[DONE]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import orjson
from starlette.background import BackgroundTask

from gateway.api.chunks import DONE, ChoiceStream, ChunkEncoder, finish_reason, sse_event
from gateway.api.sse import EventStream
from gateway.backend.backend_parsed import ChoiceReader
from gateway.backend.parse_plan import ParsePlan
from gateway.backend.upstream import Backend
from gateway.ops.errors import UPSTREAM_ERROR, ApiError, error_body
from gateway.ops.observe import RequestRecord, stream_failure_kind

DRAIN_SECONDS = 1.0


class StreamTranslator:
    """Turns one request's upstream chunks into gateway SSE events; timing
    and parse outcomes go to the request's record, and `usage` keeps the
    backend's last usage, counted once when the stream ends."""

    def __init__(self, plan: ParsePlan, encoder: ChunkEncoder, record: RequestRecord) -> None:
        self._plan = plan
        self._encoder = encoder
        self._record = record
        self._choices: dict[int, ChoiceStream] = {}
        self.usage: object = None  # the last `usage` seen: totals so far (vLLM's continuous_usage_stats repeats them)

    def translate(self, chunk: dict) -> list[bytes]:
        events: list[bytes] = []
        carried_text = False
        for choice in chunk.get("choices") or ():
            carried_text |= self._translate_choice(choice, events)
        if carried_text:
            self._record.text_chunk()
        usage = chunk.get("usage")
        if usage:
            events.append(self._encoder.usage(usage))
            self.usage = usage
        return events

    def _translate_choice(self, choice: dict, out: list[bytes]) -> bool:
        """Translate one choice's delta; True when it carried text (content,
        or the reasoning or tool calls of a backend that parses for itself)."""
        index = choice.get("index", 0)
        stream = self._choices.get(index)
        if stream is None:
            stream = self._choices[index] = ChoiceStream(
                ChoiceReader(self._plan), self._plan.call_id, self._plan.reasoning_keys
            )
        if stream.finished:
            return False
        part = choice.get("delta")
        part = part if isinstance(part, dict) else {}
        events = stream.pipeline.read(part)
        carried_text = bool(events) or bool(part.get("content"))  # held-back content counts too
        reason = choice.get("finish_reason")
        if reason is not None:
            events = events + self._finish(stream)
        delta = stream.delta(events)
        logprobs = choice.get("logprobs")
        if delta or logprobs:
            out.append(self._encoder.choice(index, delta, logprobs=logprobs))
        if reason is not None:
            unmet = self._plan.tool_choice.unmet(stream.made_call)
            out.append(self._encoder.choice(index, {}, finish_reason(stream.made_call, reason), extra=unmet))
        return carried_text

    def _finish(self, stream: ChoiceStream) -> list:
        events = stream.finish()
        self._record.parsed(stream.pipeline.outcomes)
        return events

    def flush_unfinished(self) -> list[bytes]:
        """The backend stopped early: whatever unfinished choices still hold."""
        out = []
        for index, stream in self._choices.items():
            if not stream.finished:
                delta = stream.delta(self._finish(stream))
                if delta:
                    out.append(self._encoder.choice(index, delta))
        return out

    @property
    def complete(self) -> bool:
        """Every choice seen has finished (and at least one was seen)."""
        return bool(self._choices) and all(stream.finished for stream in self._choices.values())


async def _relay(
    response: httpx.Response, translator: StreamTranslator, backend: Backend, record: RequestRecord
) -> AsyncIterator[bytes]:
    failure_kind = "stream_error"
    try:
        failure = None
        async for events in _translated(response, translator, backend):
            for event in events:
                yield event
    except ApiError as error:
        failure = error.body
        failure_kind = stream_failure_kind(error)
    finally:
        await backend.release(response)  # also when the client went away: the upstream request ends now
        record.usage(translator.usage)
    if failure is None and not translator.complete:
        failure = error_body(f"the backend for model {backend.name!r} ended the stream early", type=UPSTREAM_ERROR)
        failure_kind = "stream_cut"
    for event in translator.flush_unfinished():
        yield event
    if failure is not None:
        record.upstream_failed(failure_kind)
        yield sse_event(failure)
    yield DONE


async def _translated(
    response: httpx.Response, translator: StreamTranslator, backend: Backend
) -> AsyncIterator[list[bytes]]:
    """Each upstream chunk's events; the backend's failures raise ApiError."""
    payloads = backend.payloads(response)
    async for data in payloads:
        if data == b"[DONE]":
            await _drain(payloads)
            return
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            message = f"the backend for model {backend.name!r} sent a malformed chunk"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed") from None
        if not isinstance(chunk, dict) or "error" in chunk:
            raise _backend_error(chunk, backend)
        yield translator.translate(chunk)


async def _drain(payloads: AsyncIterator[bytes]) -> None:
    """Read the little that follows `[DONE]` (the end of the body), so that
    the connection goes back to the pool instead of being closed; a backend
    that keeps the stream open after it gets `DRAIN_SECONDS`."""
    with anyio.move_on_after(DRAIN_SECONDS):
        async for _ in payloads:
            pass


def _backend_error(chunk: object, backend: Backend) -> ApiError:
    """The backend's own in-stream error, passed on (redacted) when it is OpenAI-shaped."""
    details = chunk.get("error") if isinstance(chunk, dict) else None
    if isinstance(details, str):
        details = {"message": details}
    return backend.relayed_error(502, details if isinstance(details, dict) else {"type": UPSTREAM_ERROR})


async def stream_completion(
    backend: Backend, body: bytes, plan: ParsePlan, model: str, record: RequestRecord
) -> EventStream:
    """Open the backend stream (errors before the first byte are plain HTTP
    errors) and relay it as parsed SSE chunks."""
    response = await backend.open(body)
    translator = StreamTranslator(plan, ChunkEncoder(model), record)
    return EventStream(
        _relay(response, translator, backend, record), background=BackgroundTask(backend.release, response)
    )
