"""One choice of a backend's answer read: its text through the parse
plan's pipeline, and what its other fields say.

Backends that parse for themselves: when a backend runs its own reasoning
or tool-call parser, its deltas and messages already carry
`reasoning_content` (or vLLM's newer `reasoning`) and structured
`tool_calls`. Those are passed through as parser events instead of being
parsed twice, so our output contract (call ids, indices, finish_reason)
still holds.

Per choice, the backend's own parsing takes over a stage from the moment it
shows: after backend reasoning, content still goes through our tool-call
parser (a backend with only a reasoning parser on); after backend tool
calls, content is passed through as it comes.

What the fields of a choice say beyond its text: the turn's finish
reason, the request's stop string it stopped on, and whether a field that
holds text (`finish_reason`, a message's or delta's `content`) holds text
or null, as the OpenAI API has it. Anything else in one is a malformed
chunk, or an invalid answer (api/turns.py).
"""

from __future__ import annotations

import dataclasses

import orjson

from gateway.plan.parse_plan import ParsePlan
from parsers import CallArgs, CallEnd, CallOutcomes, CallStart, Content, Event, Pipeline, Reasoning
from parsers.stages.call_filter import CallFilter

_CALL_EVENTS = (CallStart, CallArgs, CallEnd)


def backend_reasoning(part: dict) -> str | None:
    """The reasoning text a backend put in a delta or message, if any."""
    for key in ("reasoning_content", "reasoning"):
        text = part.get(key)
        if isinstance(text, str):
            return text
    return None


def backend_tool_calls(part: dict) -> list[dict]:
    calls = part.get("tool_calls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _arguments_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    return "" if arguments is None else orjson.dumps(arguments).decode()


class ChoiceReader:
    """One choice's input: raw text through our pipeline, or the backend's
    own parsed fields passed through, switching per stage as they appear."""

    __slots__ = (
        "_plan",
        "_pipeline",
        "_calls",
        "_offset",
        "_backend_calls",
        "_tool_stage_only",
        "_outcomes",
        "_open_calls",
        "reasoning_chars",
        "generated_chars",
    )

    def __init__(self, plan: ParsePlan) -> None:
        self._plan = plan
        self._pipeline: Pipeline | CallFilter | None = plan.pipeline()
        self._calls = 0  # calls started so far in this choice
        self._offset = 0  # index of this pipeline's first call
        self._backend_calls: dict[int, int] = {}  # backend index -> our index
        self._tool_stage_only = False
        self._outcomes = CallOutcomes()  # the backend's own calls, and the outcomes of retired pipelines
        self._open_calls: set[int] = set()  # calls started and not ended (a backend's own: its latest)
        self.reasoning_chars = 0  # characters of reasoning read so far
        self.generated_chars = 0  # characters of text the backend generated so far (reasoning, content, calls)

    def read(self, part: dict) -> list[Event]:
        """Events for one delta (streamed) or one whole message."""
        text = part.get("content")
        if "reasoning_content" not in part and "reasoning" not in part and "tool_calls" not in part:
            # raw text only, as nearly every chunk of a raw-text backend: the short way
            if not isinstance(text, str) or not text:
                return []
            self.generated_chars += len(text)
            if self._pipeline is None:
                return [Content(text)]
            parsed = self._pipeline.feed(text)
            if len(parsed) == 1:  # most pieces: one run of text, no call to count or shift
                if type(parsed[0]) is Content:
                    return parsed
                if type(parsed[0]) is Reasoning:
                    self.reasoning_chars += len(parsed[0].text)
                    return parsed
            return self._from_pipeline(parsed)
        reasoning = backend_reasoning(part)
        calls = backend_tool_calls(part)
        self.generated_chars += len(reasoning or "")
        events: list[Event] = []
        if calls and self._pipeline is not None:
            events += self._retire_pipeline(None)
        elif reasoning and self._pipeline is not None and not self._tool_stage_only:
            events += self._retire_pipeline(dataclasses.replace(self._plan, reasoning_parser=None).pipeline())
            self._tool_stage_only = True
        if reasoning:
            self.reasoning_chars += len(reasoning)
            events.append(Reasoning(reasoning))
        if isinstance(text, str) and text:
            self.generated_chars += len(text)
            events += self._from_pipeline(self._pipeline.feed(text)) if self._pipeline else [Content(text)]
        for call in calls:
            events += self._backend_call(call)
        return events

    def finish(self) -> list[Event]:
        return self._from_pipeline(self._pipeline.finish()) if self._pipeline else []

    @property
    def open_calls(self) -> frozenset[int]:
        """The calls started and not yet ended: what a cut now would cut."""
        return frozenset(self._open_calls)

    def _from_pipeline(self, events: list[Event]) -> list[Event]:
        """A pipeline's `events`, its call indices shifted past the calls this
        choice made before it (a backend's own, a retired pipeline's), and
        counted: reasoning characters, calls started, opened and ended."""
        for position, event in enumerate(events):
            if type(event) is Content:
                continue
            if type(event) is Reasoning:
                self.reasoning_chars += len(event.text)
                continue
            if not isinstance(event, _CALL_EVENTS):
                continue
            if self._offset:
                event = events[position] = dataclasses.replace(event, index=event.index + self._offset)
            if type(event) is CallStart:
                self._calls += 1
                self._open_calls.add(event.index)
            elif type(event) is CallEnd:
                self._open_calls.discard(event.index)
        return events

    @property
    def made_call(self) -> bool:
        """Whether this choice has started a tool call."""
        return self._calls > 0

    @property
    def outcomes(self) -> CallOutcomes:
        """The choice's tool-call outcomes: the backend's own calls, and
        those of every pipeline that read its text (retired ones included)."""
        current = self._pipeline.outcomes if self._pipeline is not None else None
        return self._outcomes if current is None else _sum(self._outcomes, current)

    def _retire_pipeline(self, successor: Pipeline | CallFilter | None) -> list[Event]:
        """Flush what the current pipeline holds and hand over to `successor`."""
        retired = self._pipeline
        assert retired is not None, "called while a pipeline reads the text"
        events = self._from_pipeline(retired.finish())
        if retired.outcomes is not None:
            self._outcomes = _sum(self._outcomes, retired.outcomes)
        self._pipeline = successor
        self._offset = self._calls
        return events

    def _backend_call(self, call: dict) -> list[Event]:
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        backend_index = call.get("index", len(self._backend_calls))
        index = self._backend_calls.get(backend_index)
        events: list[Event] = []
        if index is None:
            self._open_calls.difference_update(self._backend_calls.values())  # a backend streams calls in turn
            index = self._backend_calls[backend_index] = self._calls
            self._calls += 1
            self._outcomes.calls += 1
            self._open_calls.add(index)
            events.append(CallStart(index, function.get("name") or ""))
        arguments = _arguments_text(function.get("arguments"))
        self.generated_chars += len(arguments)
        if arguments:
            events.append(CallArgs(index, arguments))
        return events


def _sum(a: CallOutcomes, b: CallOutcomes) -> CallOutcomes:
    return CallOutcomes(a.calls + b.calls, a.fallbacks + b.fallbacks, a.invalid_arguments + b.invalid_arguments)


def text_or_null(value: object) -> bool:
    return value is None or type(value) is str


def finish_reason(made_call: bool, upstream_reason: str | None) -> str | None:
    """A turn that stopped after tool calls finished with `tool_calls`;
    any other reason (`length` included) stays as the backend said."""
    return "tool_calls" if made_call and upstream_reason == "stop" else upstream_reason


def request_stops(payload: dict) -> tuple[str, ...]:
    """The stop strings of a chat payload (`stop`: a string or a list)."""
    stop = payload.get("stop")
    if isinstance(stop, str):
        return (stop,)
    return tuple(item for item in stop if isinstance(item, str)) if isinstance(stop, list) else ()


def matched_stop(choice: dict, reason: str | None, stops: tuple[str, ...]) -> str | None:
    """The request's stop string the backend stopped on: vLLM names it in
    the choice's `stop_reason`, SGLang in `matched_stop` (either may hold
    a stop token's id instead, which is no stop string)."""
    if reason != "stop" or not stops:
        return None
    for key in ("stop_reason", "matched_stop"):
        value = choice.get(key)
        if isinstance(value, str) and value in stops:
            return value
    return None
