"""Write JSON text incrementally, for body grammars whose arguments are not
JSON (pythonic calls, Gemma 4's key:value bodies).

The grammar reports values as it reads them (`key`, `scalar`, `open` …
`close`, a string in pieces); the writer adds the `, ` and `": "`
separators (json.dumps' defaults, as SGLang writes arguments) and keeps
the text until `take()`, so a body hands the sink one fragment per step.
A key is written only with the first text of its value, so a grammar that
gives up at a value's start leaves well-formed JSON after `close_all()`.
"""

from __future__ import annotations

import json

import orjson


def json_string_body(text: str) -> str:
    """`text` as the inside of a JSON string literal."""
    try:
        return orjson.dumps(text)[1:-1].decode()
    except TypeError:  # lone surrogates, which orjson refuses; JSON escapes them
        return json.dumps(text)[1:-1]


class JsonWriter:
    __slots__ = ("_parts", "_open", "_key", "in_string")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._open: list[list] = []  # per open container: [closer, values written]
        self._key: str | None = None
        self.in_string = False

    def key(self, name: str) -> None:
        self._key = name

    def scalar(self, json_text: str) -> None:
        self._begin_value()
        self._parts.append(json_text)

    def open(self, opener: str, closer: str) -> None:
        self._begin_value()
        self._parts.append(opener)
        self._open.append([closer, 0])

    def close(self) -> None:
        self._parts.append(self._open.pop()[0])

    def open_string(self) -> None:
        self._begin_value()
        self._parts.append('"')
        self.in_string = True

    def string(self, text: str) -> None:
        self._parts.append(json_string_body(text))

    def close_string(self) -> None:
        self._parts.append('"')
        self.in_string = False

    def close_all(self) -> None:
        """Close an open string and every open container."""
        if self.in_string:
            self.close_string()
        while self._open:
            self.close()

    def take(self) -> str:
        text = "".join(self._parts)
        self._parts.clear()
        return text

    def _begin_value(self) -> None:
        if self._open:
            frame = self._open[-1]
            if frame[1]:
                self._parts.append(", ")
            frame[1] += 1
        if self._key is not None:
            self._parts.append(f'"{json_string_body(self._key)}": ')
            self._key = None
