"""Body grammar: a code tag, then code to the end of the output, a call to
a code tool (Llama 3.1's `<|python_tag|>`, as Functionary v3.1 writes it)::

    <|python_tag|>print("hi")        python {"code": "print(\\"hi\\")"}

The code is the model's text as written, up to the end of the output
(end-of-turn tokens are removed before); an empty one is `""`. The tag is
one of the format's `unmarked_starts`: at any other start the format's own
call grammar reads the body (`code_tag_or`).
"""

from __future__ import annotations

from collections.abc import Callable

from parsers.core.call_body import DONE, FAILED, RUNNING, CallBody
from parsers.core.json_writer import json_string_body


class CodeTagCall:
    def __init__(self, sink, *, tag: str, tool: str):
        self.status = RUNNING
        self._sink = sink
        self._tag = tag
        self._tool = tool
        self._open = False

    def step(self, buf: str, pos: int) -> int:
        if not self._open:
            # The stage starts this body at the whole tag it found.
            if not buf.startswith(self._tag, pos):
                self.status = FAILED
                return pos
            pos += len(self._tag)
            self._sink.start(self._tool)
            self._sink.args('{"code": "')
            self._open = True
        if pos < len(buf):
            self._sink.args(json_string_body(buf[pos:]))
        return len(buf)

    def finish(self) -> None:
        if self._open:
            self._sink.args('"}')
        self.status = DONE if self._open else FAILED


def code_tag_or(call: Callable[..., CallBody], *, tag: str, tool: str) -> Callable[..., CallBody]:
    """A body factory: a code call after the unmarked `tag`, else `call`."""

    def body(sink) -> CallBody:
        return CodeTagCall(sink, tag=tag, tool=tool) if sink.body_unmarked else call(sink)

    return body
