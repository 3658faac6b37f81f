"""A Python literal written whole, the way `repr` writes a dict, read as JSON.

Jinja's `|string` filter writes a mapping as Python does
(`{'city': 'Paris', 'days': 2, 'ok': True}`): vLLM's InternLM 2 tool
template writes a call's `arguments|string` so
(examples/tool_chat_template_internlm2_tool.jinja), and a model shown such
turns writes them back. `PyReprEnd` finds where the literal ends in
streamed text (strings in either quote, with escapes; brackets nested);
`repr_json` reads it with `ast.literal_eval`, which evaluates literals
only, and gives its JSON. Both are bounded: a literal longer than
`MAX_REPR_CHARS` or nested deeper than `MAX_REPR_DEPTH` is not read.
"""

from __future__ import annotations

import ast
import math
import re

import orjson

MAX_REPR_CHARS = 65536
MAX_REPR_DEPTH = 32
_STOPS = re.compile(r"""['"\\{}\[\]()]""")
_OPENERS, _CLOSERS = "{[(", "}])"


class PyReprEnd:
    """Where one bracketed Python literal ends: `scan` consumes up to its
    closing bracket (`done`), or all of the text; `too_long` says the
    literal went past the bounds."""

    __slots__ = ("done", "too_long", "_depth", "_quote", "_escaped", "_chars")

    def __init__(self) -> None:
        self.done = False
        self.too_long = False
        self._depth = 0
        self._quote = ""
        self._escaped = False
        self._chars = 0

    def scan(self, buf: str, pos: int) -> int:
        start = pos
        while not self.done:
            if self._escaped and pos < len(buf):  # the character after a backslash
                self._escaped = False
                pos += 1
            match = _STOPS.search(buf, pos)
            if match is None:
                pos = len(buf)
                break
            char, pos = match.group(), match.end()
            if char == "\\":
                self._escaped = bool(self._quote)
            elif self._quote:
                self._quote = "" if char == self._quote else self._quote
            elif char in "'\"":
                self._quote = char
            elif char in _OPENERS:
                self._depth += 1
                self.too_long = self.too_long or self._depth > MAX_REPR_DEPTH
            elif char in _CLOSERS:
                self._depth -= 1
                self.done = self._depth <= 0
        self._chars += pos - start
        self.too_long = self.too_long or self._chars > MAX_REPR_CHARS
        return pos


def repr_json(text: str) -> str | None:
    """The JSON of a Python dict literal, or None when `text` is not one
    (or holds a value JSON cannot write: bytes, a complex number, NaN)."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    try:
        return orjson.dumps(_jsonable(value)).decode()
    except (ValueError, TypeError):
        return None


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(value)
        return value
    if isinstance(value, dict):
        return {_key(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [_jsonable(item) for item in sorted(value, key=repr)]
    raise TypeError(type(value).__name__)


def _key(key) -> str:
    """A key as JSON writes it (`json.dumps` turns 1 into "1", True into "true")."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return orjson.dumps(_jsonable(key)).decode()
    raise TypeError(type(key).__name__)
