"""The reasoning stage: splits reasoning text from normal text.

One `ReasoningFormat` describes a `<think>`-style format as data; one
`ReasoningParser` is made per request and per choice from it. The parser
is a three-state machine over marker hits:

- ``before``: not reasoning yet; a start marker opens reasoning, all other
  text is content (an end marker here is plain content).
- ``thinking``: text is reasoning until the end marker (dropped) or the
  format's tool-start marker, which ends reasoning and is itself passed on
  as content so the tool-call stage sees it. Start markers echoed before
  any reasoning text are dropped.
- ``after``: everything is content; nothing is scanned any more.

Formats whose models think again later in the same turn (`reenters`) go
back to ``before`` at the end marker instead of ``after``; a tool-start
marker still ends scanning for good.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from parsers.events import Content, Event, Reasoning
from parsers.markers import MarkerSet, marker_set


@dataclass(frozen=True)
class ReasoningFormat:
    """A reasoning format, as data.

    `always_thinking`: the output always starts inside reasoning (templates
    that prefill the start marker); requests cannot turn it off.
    Otherwise `thinking_switches` are the `chat_template_kwargs` keys that
    turn thinking on or off for a request, and `thinking_by_default` says
    what an absent switch means (SGLang's "thinking mode", FORMATS.md §3.5);
    any true value turns it on, or with `switch_on_value` only that value
    (MiniMax M3's `thinking_mode: "enabled"`).
    `start_required`: reasoning only ever begins at the start marker, whatever
    the request says. `separates=False` keeps everything in content, with
    the start marker prepended (for clients that split it themselves).
    `reenters`: a start marker after the end marker opens reasoning again.
    `stage` replaces the `<think>` machine for formats that are not tags.
    """

    name: str
    models: str
    start: str = "<think>"
    end: str = "</think>"
    tool_start: str | None = None
    always_thinking: bool = False
    thinking_switches: tuple[str, ...] = ("enable_thinking",)
    thinking_by_default: bool = True
    switch_on_value: str | None = None
    start_required: bool = False
    separates: bool = True
    end_of_turn: tuple[str, ...] = ()
    needs_special_tokens: bool = False
    reenters: bool = False
    stage: Callable | None = None

    def make_parser(self, **options):
        """A fresh stage for one choice: `ReasoningParser`, unless the format
        has a grammar of its own (`stage`)."""
        return (self.stage or ReasoningParser)(self, **options)

    def thinking_enabled(self, chat_template_kwargs: dict | None) -> bool:
        """Whether a request with these template kwargs starts in reasoning."""
        if self.always_thinking:
            return True
        kwargs = chat_template_kwargs or {}
        for key in self.thinking_switches:
            if key in kwargs:
                value = kwargs[key]
                return bool(value) if self.switch_on_value is None else value == self.switch_on_value
        return self.thinking_by_default

    @property
    def default_force(self) -> bool:
        """Starting state when no request says otherwise (SGLang's detector default)."""
        return self.always_thinking


class ReasoningParser:
    """Streaming reasoning splitter: `feed(text) -> events`, `finish() -> events`."""

    def __init__(
        self,
        fmt: ReasoningFormat,
        *,
        force_reasoning: bool | None = None,
        stream_reasoning: bool = True,
    ):
        self.fmt = fmt
        self.stream_reasoning = stream_reasoning
        forced = fmt.default_force if force_reasoning is None else force_reasoning
        self._state = "thinking" if forced and not fmt.start_required else "before"
        self._content_prefix = "" if fmt.separates else fmt.start
        if not fmt.separates:
            self._state = "after"
        self._reasoning_seen = False
        self._held_back = ""
        self._unstreamed: list[str] = []
        self._before_markers = marker_set(fmt.start)
        closers = (fmt.end, fmt.tool_start) if fmt.tool_start else (fmt.end,)
        self._thinking_markers = marker_set(*closers)
        self._opening_markers = marker_set(fmt.start, *closers)

    def feed(self, text: str) -> list[Event]:
        if self._content_prefix and text:
            text, self._content_prefix = self._content_prefix + text, ""
        if self._state == "after":
            return [Content(text)] if text else []
        events: list[Event] = []
        buf = self._held_back + text
        pos = 0
        while self._state != "after":
            markers = self._markers()
            hit = markers.search(buf, pos)
            if hit is None:
                end = markers.safe_end(buf, pos)
                self._emit(events, buf[pos:end])
                self._held_back = buf[end:]
                return events
            self._emit(events, buf[pos : hit.start])
            self._on_marker(hit.marker, events)
            pos = hit.end
        self._held_back = ""
        if pos < len(buf):
            events.append(Content(buf[pos:]))
        return events

    def finish(self) -> list[Event]:
        events: list[Event] = []
        self._emit(events, self._content_prefix + self._held_back)
        self._content_prefix = ""
        self._held_back = ""
        self._flush_reasoning(events)
        return events

    def _markers(self) -> MarkerSet:
        if self._state == "before":
            return self._before_markers
        return self._thinking_markers if self._reasoning_seen else self._opening_markers

    def _emit(self, events: list[Event], text: str) -> None:
        if not text:
            return
        if self._state != "thinking":
            events.append(Content(text))
            return
        self._reasoning_seen = True
        if self.stream_reasoning:
            events.append(Reasoning(text))
        else:
            self._unstreamed.append(text)

    def _flush_reasoning(self, events: list[Event]) -> None:
        if self._unstreamed:
            events.append(Reasoning("".join(self._unstreamed)))
            self._unstreamed.clear()

    def _on_marker(self, marker: str, events: list[Event]) -> None:
        if marker == self.fmt.start and (self._state == "before" or not self._reasoning_seen):
            self._state = "thinking"
            return
        self._flush_reasoning(events)
        if marker == self.fmt.end and self.fmt.reenters:
            self._state = "before"
            self._reasoning_seen = False
            return
        self._state = "after"
        if marker != self.fmt.end:
            events.append(Content(marker))
