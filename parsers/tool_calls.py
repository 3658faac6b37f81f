"""The tool-call stage: splits normal text into content and tool calls.

A `ToolFormat` describes a format as data: the markers that frame a call
and the grammar of its body. `ToolCallParser`, made per request and per
choice, runs one state machine for every format:

- ``text``: content, scanned for call-start markers (and for markers the
  format drops, like stray `<think>` tags for Trinity);
- ``body``: the body grammar consumes text. Until it names the function
  the call is only tentative: if the body turns out malformed, the marker
  and everything consumed go out as content, so nothing is lost. Once
  named, a call is never retracted;
- ``closing``: after the body, optional whitespace and the end marker.

Whitespace that only separates a call from the text before it, from the
next call or from the end is formatting, not text: it is dropped. Any
other text before, between or after calls is content, verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from parsers.events import CallArgs, CallEnd, CallStart, Content, Event
from parsers.json_call import DONE, FAILED, JsonCallObject
from parsers.markers import marker_set

_WHITESPACE = " \t\r\n"


@dataclass(frozen=True)
class ToolFormat:
    """A tool-call format, as data.

    `body` builds the incremental body grammar for one call; it receives
    the parser as its `CallSink` (`start(name)`, `args(text)`).
    `call_template` writes one call the way the model does, from `{name}`
    and `{arguments}` (JSON text): for demos, benchmarks and tests.
    """

    name: str
    models: str
    call_start: str
    call_end: str
    call_template: str
    body: Callable = JsonCallObject
    dropped_markers: tuple[str, ...] = ()
    needs_special_tokens: bool = False

    def render_call(self, name: str, arguments: str) -> str:
        return self.call_template.replace("{name}", name).replace("{arguments}", arguments)


class ToolCallParser:
    """Streaming tool-call splitter: `feed(text) -> events`, `finish() -> events`."""

    def __init__(self, fmt: ToolFormat, *, tools: list[dict] | None = None):
        self.fmt = fmt
        self.tools = tools or []
        self._state = "text"
        self._held_back = ""
        self._events: list[Event] = []
        self._call_count = 0
        self._body = None
        self._tentative: list[str] = []
        self._gap = ""
        self._after_call = False
        self._text_markers = marker_set(fmt.call_start, *fmt.dropped_markers)
        self._end_marker = fmt.call_end.strip()

    # CallSink: the body grammar reports the call through these.
    def start(self, name: str) -> None:
        self._tentative.clear()
        self._gap = ""
        self._events.append(CallStart(self._call_count, name))

    def args(self, text: str) -> None:
        self._events.append(CallArgs(self._call_count, text))

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
            if not self._body.started:
                self._tentative.append(held)
            self._body.finish()
            self._end_body()
        elif self._state == "text":
            self._emit_text(held)
        if not self._after_call and self._gap:
            self._events.append(Content(self._gap))
        self._gap = ""
        self._state = "text"
        return self._take_events()

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _hold(self, buf: str, pos: int) -> None:
        self._held_back = buf[pos:]

    def _step_text(self, buf: str, pos: int) -> int | None:
        hit = self._text_markers.search(buf, pos)
        if hit is None:
            end = self._text_markers.safe_end(buf, pos)
            self._emit_text(buf[pos:end])
            self._hold(buf, end)
            return None
        self._emit_text(buf[pos : hit.start])
        if hit.marker == self.fmt.call_start:
            self._tentative = [hit.marker]
            self._body = self.fmt.body(self)
            self._state = "body"
        return hit.end

    def _step_body(self, buf: str, pos: int) -> int | None:
        body = self._body
        new_pos = body.step(buf, pos)
        if not body.started:
            self._tentative.append(buf[pos:new_pos])
        if body.status in (DONE, FAILED):
            self._end_body()
            return new_pos
        self._hold(buf, new_pos)
        return None

    def _end_body(self) -> None:
        if self._body.status == FAILED and not self._body.started:
            self._events.append(Content(self._gap + "".join(self._tentative)))
            self._gap = ""
            self._after_call = False
            self._state = "text"
        else:
            self._events.append(CallEnd(self._call_count))
            self._call_count += 1
            self._after_call = True
            self._state = "closing" if self._body.status == DONE else "text"
        self._tentative.clear()
        self._body = None

    def _step_closing(self, buf: str, pos: int) -> int | None:
        start = pos
        while pos < len(buf) and buf[pos] in _WHITESPACE:
            pos += 1
        rest = buf[pos : pos + len(self._end_marker)]
        if rest == self._end_marker:
            self._state = "text"
            return pos + len(self._end_marker)
        if len(rest) < len(self._end_marker) and self._end_marker.startswith(rest):
            self._hold(buf, start)
            return None
        self._state = "text"
        return start

    def _emit_text(self, text: str) -> None:
        """Content, except a whitespace run that only separates a call from
        the text before it, or from the next call or the end."""
        body = text.rstrip(_WHITESPACE)
        if not body:
            self._gap += text
            return
        self._events.append(Content(self._gap + body))
        self._gap = text[len(body) :]
        self._after_call = False
