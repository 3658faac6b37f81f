"""MiniMax M3 reasoning (docs/parsers.md `minimax-m3`): `<mm:think>` …
`</mm:think>`. The reply starts in reasoning only when the request asks
for it with `chat_template_kwargs: {"thinking_mode": "enabled"}`.

M3's template closes earlier non-thinking turns with a bare `</mm:think>`,
so a reply that does not start in reasoning may open with one: that
closer, and the blanks before it, are dropped rather than shown.
"""

from parsers.core.events import Content, Event, Reasoning
from parsers.formats.table import register
from parsers.stages.reasoning import ReasoningFormat, ReasoningParser


class StrayOpeningCloserDropped(ReasoningParser):
    """The `<think>` machine, except that an end marker opening a reply that
    is not in reasoning is dropped. Until the first non-blank text decides
    it, the blanks and a possible start of the marker are held back."""

    def __init__(self, fmt: ReasoningFormat, **options):
        super().__init__(fmt, **options)
        self._deciding = self._state == "before"
        self._blanks = ""
        self._opening = ""

    def feed(self, text: str) -> list[Event]:
        if not self._deciding:
            return super().feed(text)
        if not self._opening:
            body = text.lstrip()
            self._blanks += text[: len(text) - len(body)]
            text = body
        opening = self._opening + text
        end = self.fmt.end
        if opening.startswith(end):
            self._deciding = False
            return super().feed(opening[len(end) :])
        if end.startswith(opening):
            self._opening = opening
            return []
        self._deciding = False
        return super().feed(self._blanks + opening)

    def plain_event(self) -> type[Content] | type[Reasoning] | None:
        return None if self._deciding else super().plain_event()

    def finish(self) -> list[Event]:
        events = []
        if self._deciding:
            self._deciding = False
            events = super().feed(self._blanks + self._opening)
        return events + super().finish()


register(
    ReasoningFormat(
        name="minimax-m3",
        models='MiniMax M3; on only with `thinking_mode: "enabled"`',
        start="<mm:think>",
        end="</mm:think>",
        thinking_switches=("thinking_mode",),
        thinking_by_default=False,
        switch_on_value="enabled",
        stage=StrayOpeningCloserDropped,
    )
)
