"""The reasoning stage for OpenAI's Harmony format (gpt-oss).

Harmony writes messages, not tags::

    <|channel|>analysis<|message|>Need weather.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>
    <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>

A message's header (from `<|start|>` or `<|channel|>` to `<|message|>`)
decides where its body goes: the `analysis` channel is reasoning; a message
with a recipient (`to=functions.x`, in the channel or the role header) is a
tool call, passed on verbatim, header and `<|call|>` included, for the
tool-call stage; anything else (`final`, `commentary` without recipient) is
content. Text outside messages is content, except a bare channel name
between two messages (`<|call|>commentary<|channel|>…`, a filler gpt-oss
writes); stray `<|end|>`, `<|return|>` and `<|start|>assistant` are dropped. The header is short and read whole;
bodies stream.
"""

from __future__ import annotations

import re

from parsers.events import Content, Event, Reasoning
from parsers.markers import marker_set

START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
TERMINATORS = ("<|end|>", "<|return|>", "<|call|>")
_RECIPIENT = re.compile(r"\bto=\S")
_MAX_HEADER_CHARS = 1024
_FILLERS = frozenset({"analysis", "commentary", "final"})
_MAX_FILLER_CHARS = 16

_OUTSIDE = marker_set(START, CHANNEL, *TERMINATORS)
_HEADER = marker_set(MESSAGE, START)
_BODY = marker_set(*TERMINATORS, START, CHANNEL)


class HarmonyReasoningParser:
    """`feed(text) -> events`, `finish() -> events`, like `ReasoningParser`."""

    def __init__(self, fmt, **_options):
        """Harmony reasoning always streams from the start of the output:
        the `force_reasoning`/`stream_reasoning` options do not apply."""
        self.fmt = fmt
        self._state = "outside"
        self._held_back = ""
        self._header: list[str] = []
        self._kind = Content
        self._tool_call = False
        self._between: list[str] = []

    def feed(self, text: str) -> list[Event]:
        events: list[Event] = []
        buf = self._held_back + text
        pos = 0
        while True:
            markers = _HEADER if self._state == "header" else _BODY if self._state == "body" else _OUTSIDE
            hit = markers.search(buf, pos)
            end = hit.start if hit else markers.safe_end(buf, pos)
            self._take(buf[pos:end], events)
            if hit is None:
                self._held_back = buf[end:]
                return events
            self._on_marker(hit.marker, events)
            pos = hit.end

    def finish(self) -> list[Event]:
        events: list[Event] = []
        self._take(self._held_back, events)
        self._held_back = ""
        self._flush_between(events)
        if self._state == "header":
            events.append(Content("".join(self._header)))
        return events

    def _take(self, text: str, events: list[Event]) -> None:
        if not text:
            return
        if self._state == "between":
            self._between.append(text)
            if sum(map(len, self._between)) > _MAX_FILLER_CHARS:
                self._flush_between(events)
        elif self._state == "header":
            self._header.append(text)
            if sum(map(len, self._header)) > _MAX_HEADER_CHARS:
                events.append(Content("".join(self._header)))
                self._header.clear()
                self._state = "outside"
        else:
            events.append(self._kind(text))

    def _flush_between(self, events: list[Event]) -> None:
        """Text between two messages: content, unless it is a bare channel name."""
        text = "".join(self._between)
        self._between.clear()
        if self._state == "between":
            self._state = "outside"
        if text and text.strip().lower() not in _FILLERS:
            events.append(Content(text))

    def _on_marker(self, marker: str, events: list[Event]) -> None:
        if self._state == "between":
            self._flush_between(events)
        if marker in (START, CHANNEL) and self._state != "header":
            self._header = [marker]
            self._state = "header"
        elif marker == START:
            self._header.append(marker)
        elif marker == MESSAGE:
            self._open_body(events)
        elif marker in TERMINATORS:
            if self._kind is Content and self._tool_call:
                events.append(Content(marker))
            self._kind = Content
            self._state = "between"

    def _open_body(self, events: list[Event]) -> None:
        header = "".join(self._header)
        self._header.clear()
        self._state = "body"
        self._tool_call = _RECIPIENT.search(header) is not None
        if self._tool_call:
            self._kind = Content
            events.append(Content(header + MESSAGE))
        elif "analysis" in header:
            self._kind = Reasoning
        else:
            self._kind = Content
