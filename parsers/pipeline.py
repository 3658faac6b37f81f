"""Reasoning stage, then tool-call stage: the whole parse of one choice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import orjson

from parsers.core.call_body import CallOutcomes
from parsers.core.events import CallArgs, CallStart, Content, Event, Reasoning
from parsers.core.markers import marker_set
from parsers.formats.response_template import TemplateFormats
from parsers.grammars.call_array import CallArrayParser
from parsers.registry import reasoning_format, tool_format
from parsers.stages.edge_whitespace import EdgeWhitespace
from parsers.stages.end_of_turn import EndOfTurnFilter
from parsers.stages.nonempty_content import NonemptyContent
from parsers.stages.output_format import OutputFormat
from parsers.stages.reasoning import ReasoningFormat, ReasoningParser
from parsers.stages.token_suffix import SuffixStripper
from parsers.stages.tool_calls import ToolCallParser, ToolFormat
from parsers.stages.typed_arguments import TypedArguments


class ToolCallStage(Protocol):
    """What the pipeline asks of its tool-call stage (`ToolCallParser`,
    `CallArrayParser`)."""

    outcomes: CallOutcomes

    def feed(self, text: str) -> list[Event]: ...
    def finish(self) -> list[Event]: ...


class Pipeline:
    """Spells suffixed special tokens the bare way (`parsers.stages.token_suffix`),
    removes end-of-turn tokens, feeds the text through the reasoning
    stage, then its content through the tool-call stage. Either stage may
    be absent. Adjacent content events are merged, so each `feed` yields at
    most one content event per run. `filters` then pass over the events
    (declarative formats: trim the whitespace at both ends of the reasoning
    or the content, type the call arguments).

    Plain text, with no character that a marker of any stage starts with,
    is one event at once, with no stage called, while every stage is in a
    state that passes it on unchanged (`plain_event` of each: in reasoning
    or content, nothing held back). That is most pieces of a stream, and
    about 2.5 % of a paced chunk's cost in the gateway (bench/README.md,
    "Plain text past the stages")."""

    def __init__(
        self,
        reasoning,
        tool_calls: ToolCallStage | None,
        end_of_turn: EndOfTurnFilter | None = None,
        suffixes: SuffixStripper | None = None,
        filters: tuple[EdgeWhitespace | TypedArguments, ...] = (),
    ):
        self.reasoning = reasoning
        self.tool_calls = tool_calls
        self.end_of_turn = end_of_turn
        self.suffixes = suffixes
        self.filters = filters
        search = self._plain_search()
        self._can_be_plain = search is not None  # else no stage is asked again
        self._may_mark = search or _nothing
        self._plain_kind = self._plain_kind_now() if self._can_be_plain else None

    @property
    def outcomes(self) -> CallOutcomes | None:
        """The tool-call stage's counts of calls, fallbacks and invalid
        arguments so far; None without a tool-call stage."""
        return self.tool_calls.outcomes if self.tool_calls is not None else None

    def feed(self, text: str) -> list[Event]:
        plain = self._plain_kind
        if plain is not None and text and self._may_mark(text) is None:
            return [plain(text)]  # most pieces of a stream: no stage called
        if self.suffixes is not None:
            text = self.suffixes.feed(text)
        if self.end_of_turn is not None:
            text = self.end_of_turn.feed(text)
        events = self._stages(text)
        if self._can_be_plain:
            self._plain_kind = self._plain_kind_now()
        return self._trim(events) if self.filters else events

    def _plain_search(self) -> Callable[[str], object] | None:
        """A search for the first character of any marker of any stage; None
        when some stage never passes plain text on as it is (one with a
        grammar of its own, suffixed tokens, filters)."""
        if self.suffixes is not None or self.filters:
            return None
        stages = [stage for stage in (self.reasoning, self.tool_calls) if stage is not None]
        passing = [stage for stage in stages if isinstance(stage, (ReasoningParser, ToolCallParser))]
        if len(passing) < len(stages):
            return None
        markers = [marker for stage in passing for marker in stage.markers]
        if self.end_of_turn is not None:
            markers += self.end_of_turn.markers
        return marker_set(*markers).may_start_in if markers else _nothing

    def _plain_kind_now(self) -> type[Content] | type[Reasoning] | None:
        """The event that plain text comes out as, every stage passing it on
        unchanged and staying as it is; None when some stage may not."""
        if self.end_of_turn is not None and self.end_of_turn.holds_text:
            return None
        kind: type[Content] | type[Reasoning] | None = Content
        if self.reasoning is not None:
            kind = self.reasoning.plain_event() if isinstance(self.reasoning, ReasoningParser) else None
        if kind is not Content or self.tool_calls is None:
            return kind  # reasoning passes the tool-call stage as it is
        return self.tool_calls.plain_event() if isinstance(self.tool_calls, ToolCallParser) else None

    def finish(self) -> list[Event]:
        self._plain_kind = None
        tail = self.suffixes.finish() if self.suffixes is not None else ""
        if self.end_of_turn is not None:
            tail = self.end_of_turn.feed(tail) + self.end_of_turn.finish()
        events = self._stages(tail) if tail else []
        if self.reasoning is not None:
            events += self._to_tools(self.reasoning.finish())
        if self.tool_calls is not None:
            events += self.tool_calls.finish()
        return self._trim(_merge(events))

    def _trim(self, events: list[Event]) -> list[Event]:
        for event_filter in self.filters:
            events = event_filter.pass_(events)
        return events

    def _stages(self, text: str) -> list[Event]:
        if self.reasoning is None:
            return self._to_tools([Content(text)] if text else [])
        return self._to_tools(self.reasoning.feed(text))

    def _to_tools(self, events: list[Event]) -> list[Event]:
        if self.tool_calls is None:
            return _merge(events)
        out: list[Event] = []
        for event in events:
            if type(event) is Content:
                out.extend(self.tool_calls.feed(event.text))
            else:
                out.append(event)
        return _merge(out) if len(out) > 1 else out


def _nothing(text: str) -> None:
    return None


def _merge(events: list[Event]) -> list[Event]:
    if len(events) < 2:
        return events
    merged: list[Event] = []
    for event in events:
        last = merged[-1] if merged else None
        if type(event) is Content and type(last) is Content:
            merged[-1] = Content(last.text + event.text)
        elif type(event) is Reasoning and type(last) is Reasoning:
            merged[-1] = Reasoning(last.text + event.text)
        else:
            merged.append(event)
    return merged


def make_pipeline(
    reasoning_parser: str | ReasoningFormat | None,
    tool_call_parser: str | ToolFormat | None,
    *,
    output: OutputFormat | None = None,
    tools: list[dict] | None = None,
    chat_template_kwargs: dict | None = None,
    stream_reasoning: bool = True,
    force_reasoning: bool | None = None,
    force_nonempty_content: bool = False,
    call_array: bool = False,
    max_buffered_chars: int | None = None,
) -> Pipeline:
    """A fresh pipeline for one choice of one request.

    The two parsers are the stages the request reads; either may be a name
    or a format given as data (`parsers.formats.response_template`).
    `output` is what the model's output format says of the rest of the
    pipeline (`OutputFormat`: end-of-turn tokens, framing, trimmed ends,
    cast arguments); None takes it from the two parsers
    (`output_format`). The keywords are what the request says:

    `force_reasoning=None` derives the starting state from the format and
    the request's `chat_template_kwargs` when those are given (SGLang's
    serving rule), else from the format's default.
    With no reasoning parser, the framing of the tool-call format (or the
    output's, the model's, for a request whose calls are not read) is
    run as the reasoning stage, keeping the reasoning in the content.
    A reasoning format whose models call tools mid-thought is paired with
    the tool-call format: its opening markers end reasoning
    (`ReasoningFormat.paired_with`).
    `force_nonempty_content=True` reports a turn that is all reasoning as
    content (`NonemptyContent`). `call_array=True`
    reads the reply as a JSON array of calls (output constrained to one)
    instead of with a named tool-call parser. With
    `max_buffered_chars`, a call not yet recognised (or a body) holding back
    more text than that is given up: unnamed, it goes out as content;
    named, it ends with the arguments written so far. `tools` are the
    request's, read by the tool-call stage and by `output.cast_arguments`
    (`parsers.stages.typed_arguments`).
    """
    if output is None:
        output = output_format(reasoning_parser, tool_call_parser)
    tool_fmt = tool_format(tool_call_parser) if tool_call_parser is not None and not call_array else None
    reasoning = None
    framing = tool_fmt.framing if tool_fmt is not None and tool_fmt.framing else output.framing
    if reasoning_parser is None and framing is not None:
        reasoning = replace(reasoning_format(framing), separates=False).make_parser()
    if reasoning_parser is not None:
        fmt = reasoning_format(reasoning_parser).paired_with(tool_fmt.opening_markers if tool_fmt else ())
        if force_reasoning is None and chat_template_kwargs is not None:
            force_reasoning = fmt.thinking_enabled(chat_template_kwargs)
        reasoning = fmt.make_parser(force_reasoning=force_reasoning, stream_reasoning=stream_reasoning)
        if force_nonempty_content:
            reasoning = NonemptyContent(reasoning)
    tool_calls: ToolCallStage | None = None
    if call_array:
        tool_calls = CallArrayParser(max_buffered_chars)
    elif tool_fmt is not None:
        tool_calls = ToolCallParser(tool_fmt, tools=tools, max_buffered_chars=max_buffered_chars)
    suffixed = suffixed_tokens(reasoning_parser, tool_call_parser)
    filters = (
        ((TypedArguments(tools),) if output.cast_arguments and tools else ())
        + ((EdgeWhitespace(Reasoning),) if output.strip_reasoning else ())
        + ((EdgeWhitespace(Content),) if output.strip_content else ())
    )
    return Pipeline(
        reasoning,
        tool_calls,
        EndOfTurnFilter(output.end_of_turn) if output.end_of_turn else None,
        SuffixStripper(suffixed) if suffixed else None,
        filters,
    )


def output_format(
    reasoning_parser: str | ReasoningFormat | None,
    tool_call_parser: str | ToolFormat | None,
    template: TemplateFormats | None = None,
) -> OutputFormat:
    """The output format of a model served with these parsers (its own,
    whichever of them a request reads): their end-of-turn tokens, the
    tool-call format's framing, and what its response `template`, if any,
    says of the ends and the arguments (`TemplateFormats.output`)."""
    return OutputFormat(
        end_of_turn_tokens(reasoning_parser, tool_call_parser),
        tool_format(tool_call_parser).framing if tool_call_parser is not None else None,
        template is not None and template.strip_reasoning,
        template is not None and template.strip_content,
        template is not None and template.tool_calls is not None,
    )


def end_of_turn_tokens(
    reasoning_parser: str | ReasoningFormat | None, tool_call_parser: str | ToolFormat | None
) -> tuple[str, ...]:
    """The end-of-turn tokens of a model served with these parsers."""
    return _union_of("end_of_turn", reasoning_parser, tool_call_parser)


def suffixed_tokens(
    reasoning_parser: str | ReasoningFormat | None, tool_call_parser: str | ToolFormat | None
) -> tuple[str, ...]:
    """The token names whose spelling may carry a checkpoint suffix."""
    return _union_of("suffixed_tokens", reasoning_parser, tool_call_parser)


def _union_of(
    field: str, reasoning_parser: str | ReasoningFormat | None, tool_call_parser: str | ToolFormat | None
) -> tuple[str, ...]:
    """One tuple field of both formats, merged and sorted."""
    values = set()
    if reasoning_parser is not None:
        values.update(getattr(reasoning_format(reasoning_parser), field))
    if tool_call_parser is not None:
        values.update(getattr(tool_format(tool_call_parser), field))
    return tuple(sorted(values))


class ParseResult:
    """The merged result of a whole parse (pieces joined once, at the end)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[tuple[str, list[str]]] = []

    @property
    def content(self) -> str | None:
        return "".join(self._content) if self._content else None

    @property
    def reasoning_content(self) -> str | None:
        return "".join(self._reasoning) if self._reasoning else None

    @property
    def tool_calls(self) -> list[tuple[str, str]]:
        """(name, arguments JSON text) per call, in call order."""
        return [(name, "".join(parts)) for name, parts in self._calls]

    def add(self, events: list[Event]) -> None:
        for event in events:
            if type(event) is Content:
                self._content.append(event.text)
            elif type(event) is Reasoning:
                self._reasoning.append(event.text)
            elif type(event) is CallStart:
                self._calls.append((event.name, []))
            elif type(event) is CallArgs:
                self._calls[event.index][1].append(event.text)

    def to_json(self) -> dict:
        """The `parsegate parse` output shape; arguments decoded when valid JSON."""
        return {
            "reasoning_content": self.reasoning_content,
            "content": self.content,
            "tool_calls": [{"name": name, "arguments": _decode(args)} for name, args in self.tool_calls],
        }


def _decode(arguments: str):
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments


def parse_text(
    text: str,
    reasoning_parser: str | None = None,
    tool_call_parser: str | None = None,
    *,
    chunk_size: int | None = None,
    **pipeline_options,
) -> ParseResult:
    """Parse a whole model output, in one piece or in `chunk_size` pieces."""
    pipeline = make_pipeline(reasoning_parser, tool_call_parser, **pipeline_options)
    result = ParseResult()
    step = chunk_size or max(len(text), 1)
    for start in range(0, len(text), step):
        result.add(pipeline.feed(text[start : start + step]))
    result.add(pipeline.finish())
    return result
