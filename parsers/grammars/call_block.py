"""Body grammar: a block holding either one JSON call (an object or an
array of them, `JsonCalls`) or a run of call elements, each opened by a
marker and read by its own body grammar (a `TagCall` for
`<invoke name="…">…</invoke>`).

The first non-blank text decides which: `{` or `[` is JSON, the element
marker is a run of elements, anything else is not a block. The run ends
at the first text, past blanks, that does not open another element; the
format's end marker is read after it. An element that turns out malformed
after earlier calls of the block ends the block there: its text is
content, not swallowed.
"""

from __future__ import annotations

from collections.abc import Callable

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, RUNNING, CallBody
from parsers.core.markers import cut_short
from parsers.grammars.json_call import JsonCalls

_WHITESPACE = always_matching(r"\s*")


class CallBlock:
    def __init__(self, sink, *, element_start: str, element: Callable):
        self.status = RUNNING
        self._sink = sink
        self._element_start = element_start
        self._element = element
        self._inner: CallBody | None = None
        self._json = False
        self._elements = 0

    @property
    def held_chars(self) -> int:
        """Text of a typed value held by the element being read."""
        return getattr(self._inner, "held_chars", 0)

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING:
            if self._inner is not None:
                pos = self._step_inner(buf, pos)
                if self._inner is not None:
                    return pos
                continue
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if self._elements == 0 and buf[pos] in "{[":
                self._inner, self._json = JsonCalls(self._sink), True
            elif buf.startswith(self._element_start, pos):
                self._inner = self._element(self._sink)
                pos += len(self._element_start)
            elif cut_short(buf, pos, self._element_start):
                return pos
            else:
                self.status = DONE if self._elements else FAILED
        return pos

    def _step_inner(self, buf: str, pos: int) -> int:
        inner = self._inner
        assert inner is not None, "called while an element is read"
        pos = inner.step(buf, pos)
        if inner.status == RUNNING:
            return pos
        self._inner = None
        if inner.status == FAILED:
            if self._elements:
                self._sink.stray(self._element_start)
            self.status = DONE if self._elements else FAILED
            return pos
        self._elements += 1
        if self._json:
            self.status = DONE
        return pos

    def finish(self) -> None:
        if self._inner is not None:
            self._inner.finish()
            self._elements += self._inner.status == DONE
        self.status = DONE if self._elements else FAILED
