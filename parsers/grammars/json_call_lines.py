"""Body grammar: JSON call objects one after another, one a line
(MiniMax-M1, after `<tool_calls>`)::

    {"name": "get_weather", "arguments": {"city": "Paris"}}
    {"name": "search", "arguments": {"query": "x"}}

An object is a call once it has both its `name` and its `arguments` key,
as MiniMax's own parser requires. After a first call, a line that is not
a call (malformed JSON, an object without a name or arguments) is skipped
to its end (its newline included, or up to the `<` of a closing tag) and
goes to content as written; the lines after it are read again. The body
ends, unconsumed, at the first character that starts no object (the `<`
of `</tool_calls>`). A first line that is not a call makes the whole body
content, as for every JSON format.
"""

from __future__ import annotations

import re
from typing import Protocol

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, RUNNING, CallSink
from parsers.grammars.json_call import JsonCallObject

_WHITESPACE = always_matching(r"\s*")
_LINE_END = re.compile(r"[\n<]")


class LineSink(CallSink, Protocol):
    def stray(self, text: str) -> None: ...


def _any_name(name: str) -> bool:
    return True


class JsonCallLines:
    def __init__(self, sink: LineSink):
        self.status = RUNNING
        self._sink = sink
        self._calls = 0
        self._item: JsonCallObject | None = None
        self._unstarted: list[str] = []  # what the current object consumed before it became a call
        self._skipping = False

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING:
            if self._skipping:
                line_end = _LINE_END.search(buf, pos)
                end = len(buf) if line_end is None else line_end.end() - (line_end.group() == "<")
                if end > pos:
                    self._sink.stray(buf[pos:end])
                if line_end is None:
                    return end
                self._skipping, pos = False, end
                continue
            if self._item is not None:
                pos = self._step_item(self._item, buf, pos)
                if self._item is not None:
                    return pos
                continue
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if buf[pos] == "{":
                self._item = JsonCallObject(self._sink, accepts=_any_name)
                self._unstarted.clear()
            else:
                self.status = DONE if self._calls else FAILED
        return pos

    def _step_item(self, item: JsonCallObject, buf: str, pos: int) -> int:
        new_pos = item.step(buf, pos)
        if not item.started:
            self._unstarted.append(buf[pos:new_pos])
        if item.status == RUNNING:
            return new_pos
        self._item = None
        if item.started:
            self._calls += 1
            if item.status == FAILED:  # a call whose object broke off: the rest of its line is text
                self._sink.end()
                self._skipping = True
        elif self._calls:
            self._sink.stray("".join(self._unstarted))
            self._skipping = True
        else:
            self.status = FAILED
        return new_pos

    def finish(self) -> None:
        item = self._item
        if item is not None:
            item.finish()
            if not item.started and self._calls:
                self._sink.stray("".join(self._unstarted))
        self.status = DONE
