"""`force_nonempty_content`: a reply that is all reasoning is given as content.

Some clients show only `content`; with this request switch
(`chat_template_kwargs.force_nonempty_content`, docs/parsers.md) a turn whose
reasoning stage produced no content at all reports its reasoning as content
instead. Streamed, that cannot be known until content appears, so reasoning
is held back until then: the stream says the same as the whole reply,
never the same text twice (SGLang streams it as reasoning, then again as
content).
"""

from __future__ import annotations

from parsers.core.events import Content, Event, Reasoning


class NonemptyContent:
    """Wraps a reasoning stage: `feed(text) -> events`, `finish() -> events`."""

    def __init__(self, reasoning):
        self.reasoning = reasoning
        self._held: list[Reasoning] | None = []

    def feed(self, text: str) -> list[Event]:
        return self._pass(self.reasoning.feed(text))

    def finish(self) -> list[Event]:
        events = self._pass(self.reasoning.finish())
        if self._held:
            events.append(Content("".join(event.text for event in self._held)))
        self._held = None
        return events

    def _pass(self, events: list[Event]) -> list[Event]:
        if self._held is None:
            return events
        out: list[Event] = []
        for event in events:
            if self._held is None:
                out.append(event)
            elif type(event) is Reasoning:
                self._held.append(event)
            else:
                out.extend(self._held)
                out.append(event)
                self._held = None
        return out
