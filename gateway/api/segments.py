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
limit, a broken stream) is closed as cut, and so is the text block still
open when the surface finishes a turn the end of output cut; the sink says
so in its way.
"""

from __future__ import annotations

from typing import Protocol

from parsers import CallArgs, CallEnd, CallStart, Content, Event, Reasoning

TEXT = -1  # the text block, where call indices name the call blocks


class Sink(Protocol):
    """What a surface does with the blocks. `kind` is `Content` or
    `Reasoning`; `write`'s `block` is a call's index, or `TEXT`."""

    def open_text(self, kind: type[Event]) -> None: ...

    def open_call(self, index: int, name: str) -> None: ...

    def write(self, block: int, text: str) -> None: ...

    def close_text(self, cut: bool) -> None: ...

    def close_call(self, index: int, cut: bool) -> None: ...


class Segmenter:
    """The blocks of one choice's events, handed to `sink` as they form."""

    __slots__ = ("sink", "calls_stay_open", "kind", "open", "cut")

    def __init__(self, sink: Sink, calls_stay_open: bool) -> None:
        self.sink = sink
        self.calls_stay_open = calls_stay_open
        self.kind: type[Event] | None = None  # the open text block's kind
        self.open: dict[int, None] = {}  # the open blocks in their order: call indices, `TEXT`
        self.cut: set[int] = set()  # the calls the end of output cut

    def feed(self, events: list[Event], cut_calls: frozenset[int] = frozenset()) -> None:
        """One update's events (and the calls its end cut)."""
        if cut_calls:
            self.cut.update(cut_calls)
        if len(events) == 1:  # the common update, one more piece of an open block: written at once
            event = events[0]
            if type(event) is CallArgs:
                if event.text and event.index in self.open:
                    self.sink.write(event.index, event.text)
                return
            if (type(event) is Content or type(event) is Reasoning) and type(event) is self.kind and event.text:
                self.sink.write(TEXT, event.text)
                return
        run: list[str] = []  # text for `block` not yet written
        block = TEXT
        for event in events:
            if type(event) is CallStart:
                self._write(block, run)
                self._close_text()
                if not self.calls_stay_open:
                    self._close_calls()
                self.sink.open_call(event.index, event.name)
                self.open[event.index] = None
            elif type(event) is CallEnd:
                if event.index in self.open:
                    self._write(block, run)
                    self._close_call(event.index)
            elif type(event) is CallArgs:
                if event.text and event.index in self.open:
                    if block != event.index:
                        self._write(block, run)
                        block = event.index
                    run.append(event.text)
            elif event.text:
                if type(event) is not self.kind:
                    self._write(block, run)
                    self._close_text()
                    if not self.calls_stay_open:
                        self._close_calls()
                    self.sink.open_text(type(event))
                    self.kind = type(event)
                    self.open[TEXT] = None
                if block != TEXT:
                    self._write(block, run)
                    block = TEXT
                run.append(event.text)
        if run:
            self.sink.write(block, "".join(run))

    def finish(self, cut: bool = False, cut_calls: frozenset[int] = frozenset()) -> None:
        """Close every block still open, in their order; `cut`: the end of
        output (the token limit, a broken stream, the client leaving) cut
        the text block. The turn names the calls it cut (a call may be over
        before it closes), in its updates or here in `cut_calls`."""
        self.cut.update(cut_calls)
        for index in list(self.open):
            if index == TEXT:
                self._close_text(cut)
            else:
                self._close_call(index)

    def _write(self, block: int, run: list[str]) -> None:
        if run:
            self.sink.write(block, "".join(run))
            run.clear()

    def _close_text(self, cut: bool = False) -> None:
        if self.kind is not None:
            del self.open[TEXT]
            self.kind = None
            self.sink.close_text(cut)

    def _close_calls(self) -> None:
        for index in list(self.open):
            self._close_call(index)

    def _close_call(self, index: int) -> None:
        del self.open[index]
        self.sink.close_call(index, index in self.cut)
