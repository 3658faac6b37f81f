"""The tool-call stage: splits normal text into content and tool calls.

A `ToolFormat` (`parsers.stages.tool_format`) describes a format as data:
the markers that frame a call and the grammar of its body. `ToolCallParser`,
made per request and per choice, runs one state machine for every format:

- ``text``: content, scanned for call-start markers (and, for pythonic
  calls, a bare `[`), for a section-start marker that opens a block of
  calls, and for markers the format drops (end-of-turn tokens, stray
  `<think>` tags for Trinity); inside a section its end marker closes it;
- ``body``: the body grammar consumes text. Until it names the function
  the call is only tentative: if the body turns out malformed, the marker
  and everything consumed go out as content, so nothing is lost. Once
  named, a call is never retracted;
- ``closing``: after the body, optional whitespace and the end marker.

A whitespace-only run between the start of the output, a call or a
dropped marker, and a call, the end of a section or the end of the
output, is formatting, not text: it is dropped
(`</think>\n\n<tool_call>` gives no content "\n\n"). All other text
before, between or after calls is content, verbatim.
"""

from __future__ import annotations

import io

from parsers.core.between_calls import BetweenCalls
from parsers.core.call_body import DONE, FAILED, CallBody, CallOutcomes
from parsers.core.coerce import function_parameters, parameter_types
from parsers.core.events import CallArgs, CallEnd, CallStart, Content, Event
from parsers.core.markers import Hit, MarkerSet, marker_set
from parsers.stages.tool_format import ToolFormat

_WHITESPACE = " \t\r\n"


class ToolCallParser(BetweenCalls):
    """Streaming tool-call splitter: `feed(text) -> events`, `finish() -> events`.
    `outcomes` counts its calls, fallbacks and invalid arguments."""

    def __init__(self, fmt: ToolFormat, *, tools: list[dict] | None = None, max_buffered_chars: int | None = None):
        self.fmt = fmt
        self.tools = tools or []
        self._max_buffered = max_buffered_chars
        self._tentative_chars = 0
        # A bare call may start at the start of the output, or right after a
        # passthrough block (xLAM's `<think>…</think>[{…}]`, as vLLM reads it).
        self._bare_state = "bare" if fmt.bare_start else "text"
        self._state = self._bare_state
        self._held_back = ""
        self._events: list[Event] = []
        self._call_count = 0
        self._call_open = False
        self._arguments = io.StringIO()
        self.outcomes = CallOutcomes()
        self._body: CallBody | None = None
        self._body_first_call = 0
        self._body_marked = False
        self._body_is_text = False
        self._tentative: list[str] = []
        self._call_starts = (fmt.call_start, *fmt.other_call_starts)
        # Call markers a bare call could be mistaken for (xLAM's `[TOOL_CALLS]` before its `[`).
        self._bare_lookalikes = tuple(marker for marker in self._call_starts if marker[:1] in fmt.bare_start)
        self._bare_anywhere = (*fmt.bare_start_anywhere, *fmt.unmarked_starts)
        self._passthrough_closer_of = {opener: marker_set(closer) for opener, closer in fmt.passthrough_blocks}
        self._passthrough_end: MarkerSet | None = None
        self._init_between(
            (*self._call_starts, *fmt.dropped_markers, *self._bare_anywhere, *self._passthrough_closer_of),
            (fmt.section_start, *fmt.other_section_starts) if fmt.section_start else (),
            (fmt.section_end, *fmt.other_section_ends) if fmt.section_end else (),
        )
        self._fallback_drops = marker_set(*fmt.fallback_drops) if fmt.fallback_drops else None
        self._closers = [
            (marker, state)
            for marker, state in ((fmt.call_end.strip(), "text"), (fmt.call_separator, "bare"))
            if marker
        ]

    # CallSink: the body grammar reports calls through these.
    def start(self, name: str) -> None:
        self._tentative.clear()
        self._gap = ""
        self._call_open = True
        self._arguments = io.StringIO()
        self._events.append(CallStart(self._call_count, name))

    def args(self, text: str) -> None:
        self._arguments.write(text)
        self._events.append(CallArgs(self._call_count, text))

    def parameter_types(self, name: str) -> dict:
        """Parameter name -> JSON types allowed by the request's tool schema."""
        return parameter_types(self.tools, name)

    def function_schema(self, name: str):
        """The request's parameters schema for function `name`, `$ref`s resolved."""
        return function_parameters(self.tools, name)

    def _unmarked_start_at(self, buf: str, pos: int) -> bool:
        return not self._tentative_chars and any(buf.startswith(marker, pos) for marker in self.fmt.unmarked_starts)

    @property
    def body_unmarked(self) -> bool:
        """Whether the current body began at one of the format's
        `unmarked_starts`: its function must then be one the request offers."""
        return not self._body_marked and bool(self.fmt.unmarked_starts)

    def offers(self, name: str) -> bool:
        """Whether the request's tools include `name` (any name without tools)."""
        return not self.tools or any(
            isinstance(tool, dict) and isinstance(tool.get("function"), dict) and tool["function"].get("name") == name
            for tool in self.tools
        )

    @property
    def max_buffered_chars(self) -> int | None:
        """The cap on held-back text, for a body that reads several calls."""
        return self._max_buffered

    def stray(self, text: str) -> None:
        """Text inside a call's body that belongs to no argument: content."""
        self._events.append(Content(text))

    def reply(self, text: str) -> None:
        """The body holds no call but a message that is content (generic
        JSON's `response`, Functionary's `all` recipient): what it read so
        far is dropped, `text` is content, and the body is no longer tentative."""
        self._tentative.clear()
        self._body_is_text = True
        self._emit_text(text)

    def end(self) -> None:
        self._events.append(CallEnd(self._call_count))
        self.outcomes.count_call(self._arguments.getvalue())
        self._arguments = io.StringIO()
        self._call_count += 1
        self._call_open = False
        self._drops_text = self.fmt.drops_text_after_calls
        self._at_boundary = True

    @property
    def markers(self) -> tuple[str, ...]:
        """The markers looked for in text outside a section."""
        return self._text_markers.markers

    def plain_event(self) -> type[Content] | None:
        """`Content` while `feed` makes text with no character a marker
        starts with into content as it is, changing nothing else (in text,
        past any blank that may precede a call); None otherwise."""
        if self._state != "text" or self._held_back or self._in_section or self._at_boundary:
            return None
        return None if self._drops_text else Content

    def feed(self, text: str) -> list[Event]:
        buf = self._held_back + text
        pos = 0
        while pos < len(buf):
            step = getattr(self, "_step_" + self._state)
            new_pos = step(buf, pos)
            if new_pos is None:
                break
            pos = new_pos
        else:
            self._held_back = ""
        return self._take_events()

    def finish(self) -> list[Event]:
        held, self._held_back = self._held_back, ""
        if self._state == "body":
            body = self._body
            assert body is not None, "the body state has a body"
            if held and hasattr(body, "read_to_end"):
                ended_at = body.read_to_end(held)
                if ended_at is not None:  # the block ended inside the held text: read on from there
                    self._end_body()
                    events = self.feed(held[ended_at:])
                    return events + self.finish()
            committed = not self._committed_nothing()
            if not committed:
                self._tentative.append(held)
            leftover = body.leftover(held) if committed and held and hasattr(body, "leftover") else ""
            body.finish()
            self._end_body()
            if leftover:  # a tag's text the output cut off, not a cut marker: content
                self._events.append(Content(leftover))
        elif self._state in ("text", "bare", "passthrough"):
            self._emit_text(held)
        if self._gap and self._call_count == 0:
            self._events.append(Content(self._gap))
        self._gap = ""
        self._state = "text"
        return self._take_events()

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _hold(self, buf: str, pos: int) -> None:
        self._held_back = buf[pos:]

    def _at_marker(self, hit: Hit) -> int | None:
        if hit.marker in self._call_starts:
            self._begin_body([hit.marker])
        elif hit.marker in self._passthrough_closer_of:
            self._emit_text(hit.marker)
            self._passthrough_end = self._passthrough_closer_of[hit.marker]
            self._state = "passthrough"
        elif hit.marker in self._bare_anywhere:
            self._begin_body([])
            return hit.start
        else:
            self._passed(hit.marker)
        return hit.end

    def _step_passthrough(self, buf: str, pos: int) -> int | None:
        """Inside a passthrough block: content, up to and with its closer."""
        closer = self._passthrough_end
        assert closer is not None, "the passthrough state has a closer"
        hit = closer.search(buf, pos)
        if hit is None:
            end = closer.safe_end(buf, pos)
            self._emit_text(buf[pos:end])
            self._hold(buf, end)
            return None
        self._emit_text(buf[pos : hit.end])
        self._state = self._bare_state
        return hit.end

    def _begin_body(self, tentative: list[str]) -> None:
        self._tentative = tentative
        self._tentative_chars = sum(map(len, tentative))
        self._body_marked = bool(tentative)
        self._body_is_text = False
        self._body = self.fmt.body(self)
        self._body_first_call = self._call_count
        self._state = "body"

    def _step_body(self, buf: str, pos: int) -> int | None:
        body = self._body
        assert body is not None, "the body state has a body"
        new_pos = body.step(buf, pos)
        if body.status == FAILED and new_pos == pos and self._unmarked_start_at(buf, pos):
            new_pos = pos + 1  # an unmarked start the body could not read: its first character is text
        committed_nothing = self._committed_nothing()
        if committed_nothing:
            self._tentative.append(buf[pos:new_pos])
            self._tentative_chars += new_pos - pos
        if body.status in (DONE, FAILED):
            self._end_body()
            return new_pos
        held = self._tentative_chars if committed_nothing else getattr(body, "held_chars", 0)
        if self._over_budget(len(buf) - new_pos + held):
            if not committed_nothing:
                body.finish()  # keep the call as written so far
            self._end_body()  # a call not yet named goes out as content
            return new_pos  # what the body held back is read again, as text
        self._hold(buf, new_pos)
        return None

    def _over_budget(self, held_chars: int) -> bool:
        return self._max_buffered is not None and held_chars > self._max_buffered

    def _committed_nothing(self) -> bool:
        return self._call_count == self._body_first_call and not self._call_open and not self._body_is_text

    def _end_body(self) -> None:
        if self._committed_nothing():
            text = "".join(self._tentative)
            if self._fallback_drops is not None:
                text = self._fallback_drops.remove(text)
            if text or self._fallback_drops is None:
                self.outcomes.fallbacks += self._body_marked
                self._events.append(Content(self._gap + text))
                self._gap = ""
                self._at_boundary = False
            self._state = "text"
        else:
            if self._call_open:
                self.end()
            assert self._body is not None, "called while a body is read"
            self._state = "closing" if self._body.status == DONE and self._closers else "text"
        self._tentative.clear()
        self._body = None

    def _step_closing(self, buf: str, pos: int) -> int | None:
        """After a body: optional whitespace, then the end marker (back to
        text) or the separator (another bare call), if either comes."""
        start = pos
        while pos < len(buf) and buf[pos] in _WHITESPACE:
            pos += 1
        for marker, next_state in self._closers:
            if buf.startswith(marker, pos):
                self._state = next_state
                return pos + len(marker)
        if any(len(buf) - pos < len(marker) and marker.startswith(buf[pos:]) for marker, _ in self._closers):
            self._hold(buf, start)
            return None
        self._state = "text"
        return start

    def _step_bare(self, buf: str, pos: int) -> int | None:
        """Where a call may start without a marker (the start of the output,
        after a separator): whitespace, then a `bare_start` character."""
        start = pos
        while pos < len(buf) and buf[pos] in _WHITESPACE:
            pos += 1
        if pos == len(buf):
            self._hold(buf, start)
            return None
        rest = buf[pos : pos + max(map(len, self._bare_lookalikes), default=0)]
        if any(len(rest) < len(marker) and marker.startswith(rest) for marker in self._bare_lookalikes):
            self._hold(buf, start)
            return None
        self._state = "text"
        if buf[pos] not in self.fmt.bare_start or any(rest.startswith(marker) for marker in self._bare_lookalikes):
            return start
        self._emit_text(buf[start:pos])
        self._begin_body([])
        return pos

    def _content(self, text: str) -> None:
        self._events.append(Content(text))
