"""The tool-call stage for output constrained to a JSON array of calls.

When a backend decodes under the JSON-schema constraint SGLang builds for
`tool_choice: "required"` or a named tool (docs/api.md, "tool_choice"), the whole
reply is one array of call objects, no markers::

    [{"name": "get_weather", "parameters": {"city": "Paris"}}]
    [{"name": "a", "parameters": {}}, {"name": "b", "arguments": {"x": 1}}]

`parameters` and `arguments` are both read; a single object is taken as a
one-element array. The array is read by the same linear `JsonCalls` body
the tag formats use, so arguments stream verbatim. Text that is not such
an array, and text after it, is content; leading whitespace is dropped.
With `max_buffered_chars`, an array holding back more text than that
before its first call is named is given up: that text goes out as
content, and so does the rest of the reply.
"""

from __future__ import annotations

import io

from parsers.core.call_body import RUNNING, CallOutcomes
from parsers.core.events import CallArgs, CallEnd, CallStart, Content, Event
from parsers.grammars.json_call import JsonCalls

_WHITESPACE = " \t\r\n"


class CallArrayParser:
    """Streaming reader of a JSON array of calls: `feed(text) -> events`,
    `finish() -> events`. Same interface as `ToolCallParser`, `outcomes`
    included."""

    def __init__(self, max_buffered_chars: int | None = None) -> None:
        self.outcomes = CallOutcomes()
        self._max_buffered = max_buffered_chars
        self._tentative_chars = 0
        self._arguments = io.StringIO()
        self._events: list[Event] = []
        self._body = JsonCalls(self)
        self._state = "lead"
        self._held_back = ""
        self._tentative: list[str] = []
        self._call_count = 0
        self._named = False
        self._gap = ""

    # CallSink: the body reports calls through these.
    def start(self, name: str) -> None:
        self._tentative.clear()
        self._named = True
        self._events.append(CallStart(self._call_count, name))

    def args(self, text: str) -> None:
        self._events.append(CallArgs(self._call_count, text))
        self._arguments.write(text)

    def end(self) -> None:
        self._events.append(CallEnd(self._call_count))
        self.outcomes.count_call(self._arguments.getvalue())
        self._arguments = io.StringIO()
        self._call_count += 1
        self._named = False

    def feed(self, text: str) -> list[Event]:
        buf, self._held_back = self._held_back + text, ""
        if self._state == "lead":
            start = len(buf) - len(buf.lstrip(_WHITESPACE))
            if start == len(buf):
                return []
            self._state = "body"
            buf = buf[start:]
        if self._state == "body":
            pos = self._body.step(buf, 0)
            if not self._committed():
                self._tentative.append(buf[:pos])
                self._tentative_chars += pos
            if self._body.status == RUNNING:
                if self._over_budget(len(buf) - pos):
                    self._tentative.append(buf[pos:])
                    self._end_body()
                    return self._take()
                self._held_back = buf[pos:]
                return self._take()
            self._end_body()
            buf = buf[pos:]
        self._after(buf)
        return self._take()

    def finish(self) -> list[Event]:
        """The text ended: a call left open is closed with what it has; an
        unfinished array that named no call is content."""
        held, self._held_back = self._held_back, ""
        if self._state == "body":
            if not self._committed():
                self._tentative.append(held)
            self._body.finish()
            self._end_body()
        return self._take()

    def _after(self, text: str) -> None:
        """Text after the array is content; whitespace alone is held, and
        dropped if nothing else follows."""
        text, self._gap = self._gap + text, ""
        if text.strip(_WHITESPACE):
            self._events.append(Content(text))
        else:
            self._gap = text

    def _over_budget(self, held_back: int) -> bool:
        """More text held than the cap, and no call named yet."""
        return (
            self._max_buffered is not None
            and not self._committed()
            and self._tentative_chars + held_back > self._max_buffered
        )

    def _committed(self) -> bool:
        return self._call_count > 0 or self._named

    def _end_body(self) -> None:
        """The array ended, failed, or the text ended inside it."""
        if not self._committed():
            self._events.append(Content("".join(self._tentative)))
            self.outcomes.fallbacks += bool(self._tentative and any(self._tentative))
        elif self._named:
            self.end()
        self._tentative.clear()
        self._state = "after"

    def _take(self) -> list[Event]:
        events, self._events = self._events, []
        return events
