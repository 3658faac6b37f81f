"""One chat turn, whatever surface asked for it: the backend resolved, the
parse plan built, the backend's answer read into parser events.

Every client surface (chat completions, Responses, Messages) turns its
request into the internal chat payload, opens a `Turn` with `chat_turn`,
and renders what the turn yields in its own shapes: one parsing path,
several renderers. Streamed, `TurnStream.run` hands the surface's
`deliver` a `TurnUpdate` per choice per upstream chunk (and a `UsageUpdate`
when the backend reports usage), a list per piece of the backend's body, in
a callback of the loop's as the piece arrives (upstream/body_push.py); a
backend that fails or cuts the stream leaves its `ApiError` in
`TurnStream.failure` once the run ends, after what the parsers still held.
Not streamed, `Turn.answer()` gives each choice's `ParseResult`.

A turn cut short (the stream broke, or the backend stopped at the token
limit) names the calls it cut in `cut_calls`: their arguments are as far as
the model got. Usage is read here, once (upstream/usage.py: malformed fields
dropped, reasoning tokens filled in).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import final

from fastapi import Request

from gateway.api.key_limits import model_lease
from gateway.api.request import ChatRequest
from gateway.api.session_key import session_key
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.observe import RequestRecord, stream_failure_kind, upstream_error_kind
from gateway.plan.choice_reader import ChoiceReader, finish_reason, matched_stop, request_stops, text_or_null
from gateway.plan.parse_plan import ParsePlan
from gateway.plan.request_fields import with_extra_body, with_thinking_switch
from gateway.plan.response_format import json_schema_of
from gateway.plan.tool_images import with_tool_images
from gateway.upstream.serving import Serving, serving_for
from gateway.upstream.transport import UpstreamResponse
from gateway.upstream.usage import checked_usage, with_reasoning_tokens
from parsers import CallStart, Event, ParseResult

DRAIN_SECONDS = 1.0
CUT_REASON = "length"  # the finish reason of a turn the token limit cut


@final
@dataclass(slots=True)
class TurnUpdate:
    """One choice's events from one upstream chunk. `finish_reason` (after
    our mapping: `stop`, `length`, `tool_calls`…) is set on its last update;
    `unmet` then holds what the reply left of a required tool choice."""

    choice: int
    events: list[Event]
    finish_reason: str | None = None
    logprobs: object = None
    unmet: dict | None = None
    stop_sequence: str | None = None  # the request's stop string the turn ended on
    cut_calls: frozenset[int] = frozenset()  # calls these events end because the turn was cut


@final
@dataclass(slots=True)
class UsageUpdate:
    """The backend's usage so far (totals, possibly repeated)."""

    usage: dict


@dataclass(slots=True)
class ChoiceAnswer:
    """One choice of a non-streamed turn: its merged `result`, and the
    `events` it was merged from (for surfaces that keep their order)."""

    index: int
    result: ParseResult
    finish_reason: str | None
    logprobs: object = None
    unmet: dict | None = None
    events: list[Event] = field(default_factory=list)
    stop_sequence: str | None = None  # the request's stop string the turn ended on
    cut_calls: frozenset[int] = frozenset()  # calls the token limit cut


@dataclass(slots=True)
class Answer:
    choices: list[ChoiceAnswer]
    usage: dict | None


class _Choice:
    __slots__ = ("reader", "finished")

    def __init__(self, reader: ChoiceReader) -> None:
        self.reader = reader
        self.finished = False


def _finished(reader: ChoiceReader, cut: bool) -> tuple[list[Event], frozenset[int]]:
    """The events that end a choice, and the calls they end (or open)
    that the end cut, when it was a cut."""
    open_calls = reader.open_calls
    events = reader.finish()
    if not cut:
        return events, frozenset()
    return events, open_calls | {event.index for event in events if type(event) is CallStart}


def _usage(usage: object, serving: Serving, readers: list[ChoiceReader]) -> dict | None:
    checked = checked_usage(usage, serving.name)
    if checked is None:
        return None
    reasoning = sum(reader.reasoning_chars for reader in readers)
    return with_reasoning_tokens(checked, reasoning, sum(reader.generated_chars for reader in readers))


class ChoiceReads:
    """The choices of one turn, each read by its own `ChoiceReader` as its
    parts come: a stream's deltas (`part` "delta") or a whole answer's
    messages ("message"), by the same code, so the two cannot drift. A
    choice that is not an object with an integer index, or whose content
    or finish reason is neither text nor null, raises `malformed()`."""

    __slots__ = ("turn", "part", "malformed", "by_index", "carried_text")

    def __init__(self, turn: Turn, part: str, malformed: Callable[[], ApiError]) -> None:
        self.turn = turn
        self.part = part
        self.malformed = malformed
        self.by_index: dict[int, _Choice] = {}
        self.carried_text = False  # the last part read carried text (held-back content included)

    def readers(self) -> list[ChoiceReader]:
        return [choice.reader for choice in self.by_index.values()]

    def read(self, choice: object) -> TurnUpdate | None:
        """The update of one choice's part; None once the choice finished."""
        if type(choice) is not dict or type(index := choice.get("index", 0)) is not int:
            raise self.malformed()
        state = self.by_index.get(index)
        if state is None:
            state = self.by_index[index] = _Choice(ChoiceReader(self.turn.plan))
        if state.finished:
            return None
        part = choice.get(self.part)
        part = part if isinstance(part, dict) else {}
        events = state.reader.read(part)
        if events:
            self.carried_text = True
        elif (text := part.get("content")) is not None:  # a piece that made no event (yet)
            if not text_or_null(text):
                raise self.malformed()
            self.carried_text = self.carried_text or bool(text)
        update = TurnUpdate(index, events, logprobs=choice.get("logprobs"))
        reason = choice.get("finish_reason")
        if reason is not None:
            if not text_or_null(reason):
                raise self.malformed()
            self.finish(update, choice)
        return update

    def finish(self, update: TurnUpdate, choice: dict) -> None:
        """End `update`'s choice: the events the parsers still held, and
        what the choice's finish reason (or none) makes of the turn."""
        state = self.by_index[update.choice]
        reason = choice.get("finish_reason")
        ending, update.cut_calls = self.end(state, cut=reason == CUT_REASON)
        update.events = update.events + ending
        made_call = state.reader.made_call
        update.finish_reason = finish_reason(made_call, reason)
        self.turn.record.finished(update.finish_reason)
        update.unmet = self.turn.plan.tool_choice.unmet(made_call)
        update.stop_sequence = matched_stop(choice, update.finish_reason, self.turn.stops)

    def end(self, state: _Choice, cut: bool) -> tuple[list[Event], frozenset[int]]:
        state.finished = True
        ending = _finished(state.reader, cut)
        self.turn.record.parsed(state.reader.outcomes)
        return ending


class Turn:
    """A chat request bound to what serves it and its parse plan."""

    def __init__(
        self,
        serving: Serving,
        body: bytes,
        plan: ParsePlan,
        model: str,
        record: RequestRecord,
        stops: tuple[str, ...] = (),
    ) -> None:
        self.serving = serving
        self.body = body
        self.plan = plan
        self.model = model
        self.record = record
        self.stops = stops  # the request's stop strings

    async def stream(self) -> TurnStream:
        """Open the backend stream; errors before its first byte raise ApiError."""
        try:
            response = await self.serving.open(self.body)
        except ApiError as error:
            self.record.upstream_failed(upstream_error_kind(error))
            raise
        return TurnStream(self, response)

    async def answer(self) -> Answer:
        """The backend's whole answer, read choice by choice."""
        try:
            upstream = await self.serving.complete(self.body)
        except ApiError as error:
            self.record.upstream_failed(upstream_error_kind(error))
            raise
        reads = ChoiceReads(self, "message", self.serving.errors.invalid_answer)
        choices: list[ChoiceAnswer] = []
        for choice in upstream["choices"]:
            if isinstance(choice, dict) and choice.get("index", 0) in reads.by_index:  # a second choice at one index
                self.record.upstream_failed("invalid_response")
                raise self.serving.errors.invalid_answer()
            try:
                update = reads.read(choice)
            except ApiError:
                self.record.upstream_failed("invalid_response")
                raise
            assert update is not None  # a choice's first read
            if update.finish_reason is None:  # a whole message ends its choice, with or without a reason
                reads.finish(update, choice)
            result = ParseResult()
            result.add(update.events)
            choices.append(
                ChoiceAnswer(
                    update.choice,
                    result,
                    update.finish_reason,
                    update.logprobs,
                    update.unmet,
                    update.events,
                    update.stop_sequence,
                    update.cut_calls,
                )
            )
        if not choices:  # as a stream that ends with no choice: a backend fault, not an empty answer
            self.record.upstream_failed("invalid_response")
            message = f"the backend for model {self.serving.name!r} answered no choices"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_invalid_response")
        usage = _usage(upstream.get("usage"), self.serving, reads.readers())
        if usage is not None:
            self.record.usage(usage)
        return Answer(choices, usage)


Deliver = Callable[[list["TurnUpdate | UsageUpdate"]], "asyncio.Future[None] | None"]


class TurnStream:
    """The updates of one streamed turn, handed to a surface's `deliver` as
    the backend's stream arrives, a list for each piece of it (a surface
    writes each list to its client at once, and returns the future of a
    write its client has not taken yet: upstream/body_push.py); `run` once.
    The upstream response is released when the run ends, or is cancelled."""

    def __init__(self, turn: Turn, response: UpstreamResponse) -> None:
        self.turn = turn
        self.response = response
        self.usage: dict | None = None  # the last usage seen
        self.failure: ApiError | None = None  # set when the run ends, if the backend failed
        self._reads = ChoiceReads(turn, "delta", turn.serving.errors.malformed_chunk)

    async def release(self) -> None:
        await self.turn.serving.release(self.response)

    async def run(self, deliver: Deliver) -> None:
        """Deliver the turn's updates, then the ends of the choices the
        stream left open; a backend failure is left in `failure`."""
        turn = self.turn
        serving, record = turn.serving, turn.record
        read_chunk, errors = serving.backend.read_chunk, serving.errors  # bound once: called per chunk
        failure: ApiError | None = None
        failure_kind = "stream_error"

        def read(payloads: list[bytes]) -> asyncio.Future[None] | None:
            updates: list[TurnUpdate | UsageUpdate] = []
            for data in payloads:
                if data == b"[DONE]":
                    break
                try:
                    chunk = read_chunk(data, errors)
                    if not isinstance(chunk, dict) or "error" in chunk:
                        raise _backend_error(chunk, serving)
                    self._read_chunk(chunk, updates)
                except ApiError:  # what came before the malformed or failed chunk goes out first
                    if updates:
                        deliver(updates)
                    raise
            return deliver(updates) if updates else None

        try:
            await serving.push_payloads(self.response, read, DRAIN_SECONDS)
        except ApiError as error:
            failure = error
            failure_kind = stream_failure_kind(error)
        finally:
            await serving.release(self.response)  # also when the client went away: the upstream request ends now
            record.usage(self.usage)
        if failure is None and not self.complete:
            failure = ApiError(
                502, f"the backend for model {serving.name!r} ended the stream early", type=UPSTREAM_ERROR
            )
            failure_kind = "stream_cut"
        ends: list[TurnUpdate | UsageUpdate] = []
        for index, choice in self._reads.by_index.items():
            if not choice.finished:
                events, cut_calls = self._reads.end(choice, cut=True)
                ends.append(TurnUpdate(index, events, cut_calls=cut_calls))
        if ends:
            deliver(ends)
        if failure is not None:
            record.upstream_failed(failure_kind)
            self.failure = failure

    def _read_chunk(self, chunk: dict, updates: list[TurnUpdate | UsageUpdate]) -> None:
        """One backend chunk's updates, added to `updates`; a chunk whose
        `choices` is not a list of objects with integer indices is malformed."""
        serving = self.turn.serving
        reads = self._reads
        reads.carried_text = False
        choices = chunk.get("choices")
        if type(choices) is not list:
            if choices is not None:
                raise serving.errors.malformed_chunk()
            choices = ()
        for choice in choices:
            update = reads.read(choice)
            if update is not None:
                updates.append(update)
        if reads.carried_text:
            self.turn.record.text_chunk()
        usage = chunk.get("usage")
        if usage is not None:
            usage = _usage(usage, serving, reads.readers())
        if usage:
            self.usage = usage
            updates.append(UsageUpdate(usage))

    def open_calls(self, index: int) -> frozenset[int]:
        """The calls of choice `index` still being written (a backend's own
        finished calls not among them): what the client leaving now cuts."""
        choice = self._reads.by_index.get(index)
        return choice.reader.open_calls if choice is not None and not choice.finished else frozenset()

    @property
    def complete(self) -> bool:
        """Every choice seen has finished (and at least one was seen)."""
        choices = self._reads.by_index.values()
        return bool(choices) and all(choice.finished for choice in choices)


def _backend_error(chunk: object, serving: Serving) -> ApiError:
    """The backend's own in-stream error, passed on (redacted) when it is OpenAI-shaped."""
    details = chunk.get("error") if isinstance(chunk, dict) else None
    if isinstance(details, str):
        details = {"message": details}
    return serving.errors.relayed_error(502, details if isinstance(details, dict) else {"type": UPSTREAM_ERROR})


def model_not_found(model: str) -> ApiError:
    return ApiError(
        404, f"The model {model!r} does not exist; see GET /v1/models", param="model", code="model_not_found"
    )


async def serving_request(request: Request, model: str, *, needs_server_kind: bool) -> Serving:
    """What serves `model` for this request (serving.py); 404 when nothing
    does; 429 when its key's limits on `model` refuse it (key_limits.py)."""
    serving = await serving_for(request.app.state.backends, model, needs_server_kind=needs_server_kind)
    if serving is None:
        raise model_not_found(model)
    await model_lease(request, model)
    return serving


async def chat_turn(request: Request, payload: dict, chat: ChatRequest, asked: dict | None = None) -> Turn:
    """The turn for a checked chat payload (from `asked`, the surface's own
    body, when that is not the payload itself): what serves it and for which
    session (session_key.py), the thinking switch, extra_body and the tool
    results' images (tool_images.py) applied, its parse plan, and the
    request's record told what serves it."""
    server = request.app.state.config.server
    constrained = chat.tools_active() or json_schema_of(payload.get("response_format")) is not None
    serving = await serving_request(request, chat.model, needs_server_kind=constrained)
    model = serving.model
    if serving.backend.balancer.several and model.backend.routing == "session":
        headers = model.backend.session_headers
        serving.route.session = session_key(request.headers, payload if asked is None else asked, payload, headers)
    payload = with_extra_body(with_thinking_switch(payload, model.reasoning_stage), model.extra_body)
    payload = with_tool_images(payload, takes_images=model.images and model.chat_template is None)
    plan = ParsePlan.for_request(
        payload, model, tools_active=chat.tools_active(), max_buffered_chars=server.max_buffered_chars
    )
    record = request.state.record
    record.serves(serving.name, plan.tool_stage_name, bool(chat.stream))
    body, plan = await serving.prepare(payload, plan)
    return Turn(serving, body, plan, chat.model, record, request_stops(payload))
