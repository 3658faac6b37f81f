"""Keep only the calls a request allows: a named `tool_choice` admits one
function, `parallel_tool_calls: false` at most one call.

Wraps a pipeline (`feed`/`finish`) and drops the events of every call it
does not keep — name, arguments and end — renumbering the kept calls
0, 1, … so indices stay the call ordinals the client sees. Content and
reasoning pass unchanged. Only call events are looked at, so text-heavy
chunks cost one type check per event.
"""

from __future__ import annotations

from parsers.core.events import CallArgs, CallEnd, CallStart, Event


class CallFilter:
    """`feed(text) -> events`, `finish() -> events` of `pipeline`, minus the
    calls not named in `names` (None = any) and those past `max_calls`."""

    def __init__(self, pipeline, *, names: frozenset[str] | None = None, max_calls: int | None = None):
        self.pipeline = pipeline
        self._names = names
        self._max_calls = max_calls
        self._kept: dict[int, int] = {}  # parser's call index -> index sent

    @property
    def outcomes(self):
        """The wrapped pipeline's call outcomes (dropped calls included)."""
        return self.pipeline.outcomes

    def feed(self, text: str) -> list[Event]:
        return self._filter(self.pipeline.feed(text))

    def finish(self) -> list[Event]:
        return self._filter(self.pipeline.finish())

    def _filter(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if type(event) is CallStart:
                if self._admits(event.name):
                    self._kept[event.index] = len(self._kept)
                    out.append(CallStart(self._kept[event.index], event.name))
            elif type(event) is CallArgs or type(event) is CallEnd:
                sent = self._kept.get(event.index)
                if sent is not None:
                    out.append(CallArgs(sent, event.text) if type(event) is CallArgs else CallEnd(sent))
            else:
                out.append(event)
        return out

    def _admits(self, name: str) -> bool:
        if self._names is not None and name not in self._names:
            return False
        return self._max_calls is None or len(self._kept) < self._max_calls
