"""Body grammar: Gemma 4's `call:NAME:` variant, its arguments in
`BEGIN_ARG:` … `END_ARG` blocks, and the choice between it and the
`call:NAME{…}` notation (`Gemma4Body`).

    call:create_new_file:
    BEGIN_ARG:
    parser.py
    END_ARG
    BEGIN_ARG: contents
    import re
    END_ARG
    → create_new_file {"filepath": "parser.py", "contents": "import re"}   (tool: filepath, contents)

Gemma 4 writes it under agents that describe tools in Continue's
`TOOL_NAME:` / `BEGIN_ARG:` style (ollama issue 18275,
https://github.com/ollama/ollama/issues/18275). A block may name its
parameter after `BEGIN_ARG:`; an unnamed block is the next parameter of
the tool's schema, in the order the schema declares them. A value is the
text from the newline after the block's header to the newline before
`END_ARG`: a parameter the schema types as a plain string streams as
written, any other value is typed when its block ends
(`parsers.core.coerce`). An unnamed block with no parameter left for it
(no tools, or more blocks than parameters) ends the call there: the
arguments read so far stand, the rest is content, as written. The call
starts at its first `BEGIN_ARG:`: `call:NAME:` followed by anything else
is no call. `<tool_call|>` ends the call wherever it appears.
"""

from __future__ import annotations

import re

import orjson

from parsers.core import coerce
from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink, StateSteps
from parsers.core.json_writer import json_string_body
from parsers.core.markers import marker_set
from parsers.grammars.gemma4_call import GEMMA4, Gemma4Call, Gemma4Delimiters

BEGIN, END_ARG = "BEGIN_ARG:", "END_ARG"
_HEAD = re.compile(r"call:\s*([\w.\-]+)\s*:\s*")
_KIND = re.compile(r"call:\s*[\w.\-]+\s*([:{])")
_KIND_PREFIX = re.compile(r"(?:c|ca|cal|call|call:\s*[\w.\-]*\s*)?")
_BLANKS = always_matching(r"\s*")
_HEADER = re.compile(BEGIN + r"[ \t]*([\w.\-]*)[ \t]*\n")
_HEADER_PREFIX = re.compile(BEGIN + r"[ \t]*[\w.\-]*[ \t]*")


class Gemma4Body:
    """Gemma 4's call body in either notation, chosen by what follows the
    name: `{` (`Gemma4Call`) or `:` (`BeginArgCall`)."""

    def __init__(self, sink: CallSink, delimiters: Gemma4Delimiters = GEMMA4):
        self._sink = sink
        self._delimiters = delimiters
        self._inner: Gemma4Call | BeginArgCall | None = None

    @property
    def status(self) -> str:
        return RUNNING if self._inner is None else self._inner.status

    @property
    def held_chars(self) -> int:
        return getattr(self._inner, "held_chars", 0)

    def step(self, buf: str, pos: int) -> int:
        if self._inner is None:
            end = min(len(buf), pos + MAX_TOKEN_CHARS)
            kind = _KIND.match(buf, pos, end)
            if kind is None and _KIND_PREFIX.fullmatch(buf, pos, end) and end == len(buf):
                return pos
            if kind is not None and kind.group(1) == ":":
                self._inner = BeginArgCall(self._sink, self._delimiters.end)
            else:
                self._inner = Gemma4Call(self._sink, self._delimiters)
        return self._inner.step(buf, pos)

    def finish(self) -> None:
        if self._inner is None:
            self._inner = Gemma4Call(self._sink, self._delimiters)
        self._inner.finish()


class BeginArgCall(StateSteps):
    """Incremental reader of one `call:NAME:` body (see the module docstring)."""

    def __init__(self, sink: CallSink, end: str):
        self.status = RUNNING
        self._state = "head"
        self._sink = sink
        self._end = end
        self._between = marker_set(BEGIN, end)
        self._value_ends = marker_set("\n" + END_ARG, END_ARG, end)
        self._types: dict = {}
        self._unused: list[str] = []
        self._wrote_key = False
        self._key_types: frozenset[str] = coerce.Types()
        self._streaming = False
        self._value: list[str] = []
        self.held_chars = 0

    def finish(self) -> None:
        if self.status != RUNNING:
            return
        if self._state == "head":
            self.status = FAILED
            return
        if self._state == "value":
            self._end_value()
        self._close()

    def _step_head(self, buf: str, pos: int) -> int | None:
        """`call:NAME:`, a call only once its first `BEGIN_ARG:` comes."""
        head = _HEAD.match(buf, pos)
        rest = buf[head.end() : head.end() + len(BEGIN)] if head else ""
        if head is not None and rest != BEGIN and BEGIN.startswith(rest):
            return None
        if head is None or rest != BEGIN:
            self.status = FAILED
            return pos
        name = head.group(1)
        self._sink.start(name)
        self._types = self._sink.parameter_types(name) if hasattr(self._sink, "parameter_types") else {}
        self._unused = list(self._types)
        self._state = "between"
        return head.end()

    def _step_between(self, buf: str, pos: int) -> int | None:
        pos = _BLANKS.match(buf, pos).end()
        if pos == len(buf):
            return pos
        if buf.startswith(self._end, pos):
            self._close()
            return pos + len(self._end)
        if buf.startswith(BEGIN, pos):
            self._state = "header"
            return pos
        if self._between.safe_end(buf, pos) == pos:
            return None
        self._close()  # not a block: the call ends, the rest is content
        return pos

    def _step_header(self, buf: str, pos: int) -> int | None:
        header = _HEADER.match(buf, pos)
        if header is None:
            if _HEADER_PREFIX.fullmatch(buf, pos) and len(buf) - pos <= MAX_TOKEN_CHARS:
                return None
            self._close()
            return pos
        key = header.group(1) or (self._unused[0] if self._unused else None)
        if key is None:
            self._close()
            return pos
        if key in self._unused:
            self._unused.remove(key)
        self._open_value(key)
        self._state = "value"
        return header.end()

    def _step_value(self, buf: str, pos: int) -> int | None:
        hit = self._value_ends.search(buf, pos)
        end = hit.start if hit else self._value_ends.safe_end(buf, pos)
        self._take_value(buf[pos:end])
        if hit is None:
            return end if end > pos else None
        self._end_value()
        if hit.marker == self._end:
            self._close()
            return hit.end
        self._state = "between"
        return hit.end

    def _open_value(self, key: str) -> None:
        self._key_types = self._types.get(key, coerce.Types())
        self._streaming = not self._key_types or coerce.is_plain_string(self._key_types)
        separator = ", " if self._wrote_key else "{"
        self._wrote_key = True
        self._sink.args(separator + orjson.dumps(key).decode() + ": " + ('"' if self._streaming else ""))
        self._value.clear()
        self.held_chars = 0

    def _take_value(self, text: str) -> None:
        if not text:
            return
        if self._streaming:
            self._sink.args(json_string_body(text))
            return
        self._value.append(text)
        self.held_chars += len(text)

    def _end_value(self) -> None:
        if self._streaming:
            self._sink.args('"')
        else:
            self._sink.args(coerce.to_json("".join(self._value), self._key_types))
        self._value.clear()
        self.held_chars = 0

    def _close(self) -> None:
        self._sink.args("}" if self._wrote_key else "{}")
        self._sink.end()
        self.status = DONE
