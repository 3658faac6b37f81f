"""The reasoning stage: splits reasoning text from normal text.

One `ReasoningFormat` describes a `<think>`-style format as data; one
`ReasoningParser` is made per request and per choice from it. The parser
is a state machine over marker hits:

- ``before``: not reasoning yet; a start marker opens reasoning, all other
  text is content (an end marker here is plain content).
- ``thinking``: text is reasoning until the end marker (dropped) or a
  tool-start marker (the format's own, or, for a format whose models call
  tools mid-thought, the opening marker of the tool-call format it is
  served with: `paired_with`), which ends reasoning and is itself passed
  on as content so the tool-call stage sees it. Start markers echoed
  before any reasoning text are dropped.
- ``after``: everything is content; nothing is scanned any more.

Formats whose models think again later in the same turn (`reenters`) go
back to ``before`` at the end marker instead of ``after``; a tool-start
marker still ends scanning for good. A format's `passthrough` block met
while thinking is content, markers included, and reasoning resumes after
it (state ``passthrough``). A format with `answer_markers` goes to
``answer`` instead of ``after`` at the end marker: content in which those
markers are removed.

Whitespace before the first start marker (the newlines a template or a
model writes before `<think>`) is held and dropped when the marker comes,
in either starting state: it is neither reasoning nor content.

A format's `start_label` (Gemma 4's ``thought\n``) is dropped when it
directly follows the start marker, also without its newline when the end
marker follows it at once; its prefix is held back meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from parsers.core.events import Content, Event, Reasoning
from parsers.core.markers import MarkerSet, cut_short, marker_set

EFFORTS_OFF = ("none", "no_think")  # reasoning efforts that mean "do not think" (Hunyuan's own word too)


@dataclass(frozen=True)
class ReasoningFormat:
    """A reasoning format, as data.

    `always_thinking`: the output always starts inside reasoning (templates
    that prefill the start marker); requests cannot turn it off.
    Otherwise `thinking_switches` are the `chat_template_kwargs` keys that
    turn thinking on or off for a request, and `thinking_by_default` says
    what an absent switch means (SGLang's "thinking mode", docs/api.md, "Request extensions");
    any true value turns it on, or with `switch_on_value` only that value
    (MiniMax M3's `thinking_mode: "enabled"`), or with `switch_off_value`
    any value but that one (Seed-OSS's `thinking_budget`: 0 is off, any
    other budget on).
    `start_required`: reasoning only ever begins at the start marker, whatever
    the request says. `separates=False` keeps everything in content, with
    the start marker prepended (for clients that split it themselves).
    `reenters`: a start marker after the end marker opens reasoning again.
    `start_label`: a self-label the model writes right after the start
    marker, removed with it. `drops_newline_after_end`: the one newline the
    template writes after the end marker is not content.
    `passthrough`: the (open, close) markers of a block written inside
    reasoning that belongs to the content, markers included (Apertus writes
    tool calls there); reasoning resumes after its close marker.
    `answer_markers` wrap the answer after reasoning (Cohere's
    `<|START_TEXT|>`, `<|END_TEXT|>`): they are removed from the content,
    and one met while reasoning ends it (turns whose template closed the
    reasoning itself).
    `other_starts` and `other_ends` are further spellings of the start and
    end markers, each ending what any start opened (K2 Horizon writes one
    pair per reasoning effort).
    `tool_start` ends reasoning whatever tool-call format is served with
    it (SGLang's detectors). `ended_by_tool_calls`: the models call tools
    mid-thought without closing it (Kimi K2 Thinking, DeepSeek R1), so the
    opening markers of the paired tool-call format end reasoning too;
    `paired_with` fills them in as `tool_starts`.
    `stage` replaces the `<think>` machine for formats that are not tags.
    `suffixed_tokens`: token names a checkpoint may spell with a suffix
    (`<think:opensource>`); the markers are written bare (`parsers.stages.token_suffix`).
    """

    name: str
    models: str
    start: str = "<think>"
    end: str = "</think>"
    other_starts: tuple[str, ...] = ()
    other_ends: tuple[str, ...] = ()
    tool_start: str | None = None
    ended_by_tool_calls: bool = False
    tool_starts: tuple[str, ...] = ()
    always_thinking: bool = False
    thinking_switches: tuple[str, ...] = ("enable_thinking",)
    thinking_by_default: bool = True
    switch_on_value: str | None = None
    switch_off_value: int | None = None
    start_required: bool = False
    separates: bool = True
    end_of_turn: tuple[str, ...] = ()
    needs_special_tokens: bool = False
    reenters: bool = False
    start_label: str = ""
    drops_newline_after_end: bool = False
    passthrough: tuple[str, str] | None = None
    answer_markers: tuple[str, ...] = ()
    stage: Callable | None = None
    suffixed_tokens: tuple[str, ...] = ()

    def make_parser(self, **options):
        """A fresh stage for one choice: `ReasoningParser`, unless the format
        has a grammar of its own (`stage`)."""
        return (self.stage or ReasoningParser)(self, **options)

    def paired_with(self, tool_openers: tuple[str, ...]) -> ReasoningFormat:
        """This format as served with a tool-call format whose calls open
        with `tool_openers`: those end reasoning if the format says its
        models call tools mid-thought; otherwise the format as it is, the
        markers staying literal inside reasoning."""
        if not self.ended_by_tool_calls or not tool_openers:
            return self
        return replace(self, tool_starts=tool_openers)

    def thinking_enabled(self, chat_template_kwargs: dict | None) -> bool:
        """Whether a request with these template kwargs starts in reasoning."""
        if self.always_thinking:
            return True
        kwargs = chat_template_kwargs or {}
        for key in self.thinking_switches:
            if key in kwargs:
                return self._switched_on(kwargs[key])
        return self.thinking_by_default

    def switch_values(self, on: bool) -> dict[str, object]:
        """The `chat_template_kwargs` that say thinking is `on` (or off) to
        this format's switches: `True` / `False`, or `switch_on_value` /
        `switch_off_value`. A side with no one value (a thinking budget
        turned on, a mode switch turned off) sets nothing: absent, the
        template's default holds."""
        values = (self.switch_on_value, self.switch_off_value)
        said, other = values if on else values[::-1]
        if self.always_thinking or (said is None and other is not None):
            return {}
        return dict.fromkeys(self.thinking_switches, on if said is None else said)

    def _switched_on(self, value: object) -> bool:
        if self.switch_off_value is not None:
            return value != self.switch_off_value
        return bool(value) if self.switch_on_value is None else value == self.switch_on_value

    @property
    def default_force(self) -> bool:
        """Starting state when no request says otherwise (SGLang's detector default)."""
        return self.always_thinking


class ReasoningEmitter:
    """Text out of a reasoning state machine: reasoning while its `_state`
    is ``thinking`` (streamed, or kept until `_flush_reasoning` when the
    request asked for it in one piece), content otherwise. Its users set
    `stream_reasoning`, `_state`, `_reasoning_seen` and `_unstreamed`."""

    stream_reasoning: bool
    _state: str
    _reasoning_seen: bool
    _unstreamed: list[str]

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


class ReasoningParser(ReasoningEmitter):
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
        self._label_pending = False
        self._newline_pending = False
        self._held_back = ""
        self._leading: str | None = ""  # whitespace before any start marker, until text or a marker
        self._unstreamed: list[str] = []
        self._starts = (fmt.start, *fmt.other_starts)
        self._ends = (fmt.end, *fmt.other_ends)
        self._before_markers = marker_set(*self._starts, *fmt.answer_markers)
        closers = (*self._ends, *fmt.tool_starts, *fmt.answer_markers)
        if fmt.tool_start:
            closers += (fmt.tool_start,)
        if fmt.answer_markers:
            self._answer_markers = marker_set(*fmt.answer_markers)
        if fmt.passthrough:
            closers += (fmt.passthrough[0],)
            self._passthrough_markers = marker_set(fmt.passthrough[1])
        self._thinking_markers = marker_set(*closers)
        self._opening_markers = marker_set(*self._starts, *closers)
        self._any_markers = marker_set(*self._starts, *closers, *(fmt.passthrough or ()))  # every state's, together

    def feed(self, text: str) -> list[Event]:
        if self._content_prefix and text:
            text, self._content_prefix = self._content_prefix + text, ""
        if self._state == "after":
            text = self._after_end(text)
            return [Content(text)] if text else []
        events: list[Event] = []
        plain = not self._held_back and self._leading is None and not self._label_pending
        if plain and not self._any_markers.may_start_in(text):
            # no marker, nor the start of one, in any state's set: the text as it is (most pieces)
            self._emit(events, text)
            return events
        buf = self._held_back + text
        pos = 0
        while self._state != "after":
            if self._label_pending:
                label = self.fmt.start_label
                # The label's newline is left out when the end marker follows at once: Gemma 4
                # with a zero thinking budget writes `<|channel>thought<channel|>` (llama.cpp
                # tests/test-chat.cpp, "Empty reasoning").
                bare = label.rstrip("\n")
                empty = bare + self.fmt.end
                if cut_short(buf, pos, label) or (bare != label and cut_short(buf, pos, empty)):
                    self._held_back = buf[pos:]
                    return events
                self._label_pending = False
                if buf.startswith(label, pos):
                    pos += len(label)
                elif bare != label and buf.startswith(empty, pos):
                    pos += len(bare)
            markers = self._markers()
            hit = markers.search(buf, pos)
            if hit is None:
                end = markers.safe_end(buf, pos)
                self._emit_text(events, buf[pos:end])
                self._held_back = buf[end:]
                return events
            self._emit_text(events, buf[pos : hit.start])
            self._on_marker(hit.marker, events)
            pos = hit.end
        self._held_back = ""
        rest = self._after_end(buf[pos:])
        if rest:
            events.append(Content(rest))
        return events

    @property
    def markers(self) -> tuple[str, ...]:
        """Every marker this stage looks for, in any state."""
        return self._any_markers.markers

    def plain_event(self) -> type[Content] | type[Reasoning] | None:
        """What `feed` makes of text with no character a marker starts with,
        changing nothing else: one event of this type; None when nothing
        says so now (text held back, the first reasoning not seen yet)."""
        if self._content_prefix or self._held_back or self._leading is not None or self._label_pending:
            return None
        if self._state == "thinking":
            return Reasoning if self._reasoning_seen and self.stream_reasoning else None
        if self._state == "after" and self._newline_pending:
            return None
        return Content

    def finish(self) -> list[Event]:
        events: list[Event] = []
        self._emit_text(events, self._held_back)
        self._emit_text(events, "", flush=True)
        if self._content_prefix:  # an empty output is the prepended start marker alone, as vLLM returns it
            events.append(Content(self._content_prefix))
            self._content_prefix = ""
        self._held_back = ""
        self._flush_reasoning(events)
        return events

    def _emit_text(self, events: list[Event], text: str, *, flush: bool = False) -> None:
        """`_emit`, holding whitespace that may still precede a start marker."""
        if self._leading is not None:
            if not flush and not text.strip():
                self._leading += text
                return
            text, self._leading = self._leading + text, None
        self._emit(events, text)

    def _after_end(self, text: str) -> str:
        if self._newline_pending and text:
            self._newline_pending = False
            if text[0] == "\n":
                return text[1:]
        return text

    def _markers(self) -> MarkerSet:
        if self._state == "before":
            return self._before_markers
        if self._state == "passthrough":
            return self._passthrough_markers
        if self._state == "answer":
            return self._answer_markers
        return self._thinking_markers if self._reasoning_seen else self._opening_markers

    def _on_marker(self, marker: str, events: list[Event]) -> None:
        if self.fmt.passthrough and marker in self.fmt.passthrough:
            events.append(Content(marker))
            self._state = "passthrough" if self._state == "thinking" else "thinking"
            return
        if marker in self.fmt.answer_markers:
            self._flush_reasoning(events)
            self._state = "answer"
            return
        if marker in self._starts and self._leading is not None:
            self._leading = None  # whitespace before the first start marker: dropped
        else:
            self._emit_text(events, "", flush=True)
        if marker in self._starts:
            if self._state == "thinking" and self._reasoning_seen:
                self._emit(events, marker)  # not an echo: reasoning text came first
            else:
                self._state = "thinking"
                self._label_pending = bool(self.fmt.start_label)
            return
        self._flush_reasoning(events)
        if marker in self._ends and self.fmt.reenters:
            self._state = "before"
            self._reasoning_seen = False
            return
        self._state = "answer" if self.fmt.answer_markers else "after"
        if marker not in self._ends:
            events.append(Content(marker))
        else:
            self._newline_pending = self.fmt.drops_newline_after_end
