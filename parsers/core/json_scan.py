"""Find where one JSON value ends in streamed text, in linear time.

`JsonValueScanner` does not build or validate the value: it tracks only
string state and bracket depth, jumping over string bodies and other runs
with C-speed regex searches, so that a 64 KB string argument costs a
handful of searches however it is split. Its state survives across
chunks (an escape or a string may be cut anywhere).

Why not partial-json-parser: it has no incremental API, so its users parse
the whole arguments text again on every chunk, and each parse walks an
open string character by character. Fed a 64 KB string argument in
4-character chunks it costs 56 s of CPU against 90 ms for parsegate's
whole qwen25 pipeline (631×; 9.6× at 1 KB), and turning its values back
into text rewrites the model's numbers and escapes (`1.50` → `1.5`,
`\\u00e9` → `é`): `python -m bench.partial_json_bench`, bench/README.md
"Card libraries".

`scan_to_end_marker` bounds the value by a format's end marker
(`<｜tool▁call▁end｜>`, `</function>`): the marker ends the arguments only
outside a JSON string; inside one it is text of the string, as a coding
agent writes it in a file about tool calls.
"""

from __future__ import annotations

import re

from parsers.core.always_matching import always_matching
from parsers.core.markers import Hit, MarkerSet

_STRING_STOP = re.compile(r'["\\]')
_STRUCTURE = re.compile(r'["{}\[\]]')
_PRIMITIVE_END = re.compile(r"[,}\]\s]")
_WHITESPACE = always_matching(r"\s*")


class JsonValueScanner:
    """Scans one JSON value (object, array, string or primitive)."""

    __slots__ = ("started", "done", "_depth", "_in_string", "_escaped", "_primitive")

    def __init__(self) -> None:
        self.started = False
        self.done = False
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._primitive = False

    def scan(self, buf: str, pos: int, end: int | None = None) -> int:
        """Consume `buf[pos:end]` up to the end of the value; return the index
        just past what was consumed. `done` tells whether the value ended."""
        n = len(buf) if end is None else end
        if not self.started:
            pos = _WHITESPACE.match(buf, pos, n).end()
            if pos == n:
                return pos
            self._start(buf[pos])
            pos += 1
            if self._primitive:
                return self._scan_primitive(buf, pos, n)
            if not self._in_string and self._depth == 0:
                self.done = True
                return pos
        if self._primitive:
            return self._scan_primitive(buf, pos, n)
        while pos < n:
            if self._in_string:
                pos = self._scan_string(buf, pos, n)
            else:
                match = _STRUCTURE.search(buf, pos, n)
                if match is None:
                    return n
                pos = match.end()
                char = match.group()
                if char == '"':
                    self._in_string = True
                elif char in "{[":
                    self._depth += 1
                else:
                    self._depth -= 1
            if self._depth == 0 and not self._in_string:
                self.done = True
                return pos
        return pos

    @property
    def in_string(self) -> bool:
        """Whether the scan stopped inside a string (an escape included)."""
        return self._in_string

    def finish(self) -> None:
        """The text ended: a bare primitive (`12`, `true`) is complete now."""
        if self._primitive:
            self.done = True

    def _start(self, char: str) -> None:
        self.started = True
        if char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth = 1
        else:
            self._primitive = True

    def _scan_string(self, buf: str, pos: int, n: int) -> int:
        while pos < n:
            if self._escaped:
                self._escaped = False
                pos += 1
                continue
            match = _STRING_STOP.search(buf, pos, n)
            if match is None:
                return n
            pos = match.end()
            if match.group() == "\\":
                self._escaped = True
            else:
                self._in_string = False
                return pos
        return pos

    def _scan_primitive(self, buf: str, pos: int, n: int) -> int:
        match = _PRIMITIVE_END.search(buf, pos, n)
        if match is None:
            return n
        self.done = True
        return match.start()


def scan_to_end_marker(scanner: JsonValueScanner, ends: MarkerSet, buf: str, pos: int) -> tuple[int, Hit | None]:
    """Scan the value from `pos` until it ends or an end marker outside any
    string bounds it. Returns the index just past what was consumed and the
    marker at that index, if one bounds it there (else None: the value
    ended, or more text is needed; a marker's proper prefix is held back)."""
    while True:
        hit = ends.search(buf, pos)
        bound = hit.start if hit else ends.safe_end(buf, pos)
        end = scanner.scan(buf, pos, bound)
        if scanner.done or hit is None:
            return end, None
        if not scanner.in_string:
            return end, hit
        pos = scanner.scan(buf, hit.start, hit.end)  # the marker is text of the string
