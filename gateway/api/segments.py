"""A turn's parser events cut into the content blocks of Anthropic Messages
(https://docs.anthropic.com/en/docs/build-with-claude/streaming) or the
output items of the Responses API
(https://platform.openai.com/docs/api-reference/responses-streaming) that
carry them: one decision path, with a sink for each surface, streamed or
whole (docs/agents.md, docs/agents-claude-code.md).

A text block holds one kind of text, reasoning or content; a call block
one tool call's arguments. A text block opens when the event kind changes
and closes on the next kind change or call start; a call block opens on
its call's start and closes when the call ends. Text with nothing in it
opens nothing. A parser may put text inside a call's arguments (a
reasoning tag in an argument value): Responses items may interleave, so
the call stays open and takes its later arguments (`calls_stay_open`);
Messages blocks may not, so the text closes the call and its later
arguments have no block left to take them. Consecutive text of one block
reaches the sink at once. A call the output cut (`cut_calls`: the token
limit, a broken stream) is closed as cut; the sink says so in its way.
"""

from __future__ import annotations

from typing import Protocol

from parsers import CallArgs, CallEnd, CallStart, Event

_TEXT = -1  # the text block's place in `Segmenter.open`


class Sink(Protocol):
    """What a surface does with the blocks. `kind` is `Content` or `Reasoning`."""

    def open_text(self, kind: type[Event]) -> None: ...

    def open_call(self, index: int, name: str) -> None: ...

    def write_text(self, text: str) -> None: ...

    def write_call(self, index: int, text: str) -> None: ...

    def close_text(self) -> None: ...

    def close_call(self, index: int, cut: bool) -> None: ...


class Segmenter:
    """The blocks of one choice's events, handed to `sink` as they form."""

    __slots__ = ("sink", "calls_stay_open", "kind", "open", "cut", "_run", "_target")

    def __init__(self, sink: Sink, calls_stay_open: bool) -> None:
        self.sink = sink
        self.calls_stay_open = calls_stay_open
        self.kind: type[Event] | None = None  # the open text block's kind
        self.open: dict[int, None] = {}  # the open blocks in their order: call indices, `_TEXT`
        self.cut: set[int] = set()  # the calls the end of output cut
        self._run: list[str] = []  # text for `_target` not yet written
        self._target = _TEXT

    def feed(self, events: list[Event], cut_calls: frozenset[int] = frozenset()) -> None:
        """One update's events (and the calls its end cut)."""
        if cut_calls:
            self.cut.update(cut_calls)
        for event in events:
            if type(event) is CallStart:
                self._close_text()
                if not self.calls_stay_open:
                    self._close_calls()
                self.sink.open_call(event.index, event.name)
                self.open[event.index] = None
            elif type(event) is CallEnd:
                if event.index in self.open:
                    self._close_call(event.index)
            elif type(event) is CallArgs:
                if event.text and event.index in self.open:
                    self._add(event.index, event.text)
            elif event.text:
                if type(event) is not self.kind:
                    self._close_text()
                    if not self.calls_stay_open:
                        self._close_calls()
                    self.sink.open_text(type(event))
                    self.kind = type(event)
                    self.open[_TEXT] = None
                self._add(_TEXT, event.text)
        self._flush()

    def finish(self) -> None:
        """Close every block still open, in their order."""
        self._flush()
        for index in list(self.open):
            if index == _TEXT:
                self._close_text()
            else:
                self._close_call(index)

    def _add(self, target: int, text: str) -> None:
        if target != self._target:
            self._flush()
            self._target = target
        self._run.append(text)

    def _flush(self) -> None:
        if self._run:
            text = "".join(self._run)
            self._run.clear()
            if self._target == _TEXT:
                self.sink.write_text(text)
            else:
                self.sink.write_call(self._target, text)

    def _close_text(self) -> None:
        if self.kind is not None:
            self._flush()
            del self.open[_TEXT]
            self.kind = None
            self.sink.close_text()

    def _close_calls(self) -> None:
        for index in list(self.open):
            self._close_call(index)

    def _close_call(self, index: int) -> None:
        self._flush()
        del self.open[index]
        self.sink.close_call(index, index in self.cut)
