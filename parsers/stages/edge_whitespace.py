"""Whitespace at the edges of the reasoning or the content is not text.

A declarative format (transformers' `response_template`) strips each text
field by default: `<think>\\nI see\\n</think>\\n\\nHello\\n` is reasoning
"I see" and content "Hello". Streamed, leading whitespace is dropped until
the first other character, and a whitespace run is held back until a
character after it shows it is inside the text; at the end it is dropped.
Whitespace is Python's `str.strip()`'s, as transformers strips. Each
character is looked at once, whatever the chunking.
"""

from __future__ import annotations

from parsers.core.events import Content, Event, Reasoning


class EdgeWhitespace:
    """Strips one kind of text event (`Content` or `Reasoning`) at both ends
    of the whole text it carries: `pass_(events) -> events`."""

    def __init__(self, kind: type[Content] | type[Reasoning]):
        self.kind = kind
        self._started = False
        self._held = ""

    def pass_(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if type(event) is not self.kind:
                out.append(event)
                continue
            text = self._text(event.text)
            if text:
                out.append(self.kind(text))
        return out

    def _text(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
            if not text:
                return ""
            self._started = True
        body = text.rstrip()
        if not body:
            self._held += text
            return ""
        released = self._held + body
        self._held = text[len(body) :]
        return released
