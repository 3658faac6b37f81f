"""Decode the inside of a JSON string as it streams in.

Some models write a call's arguments as a JSON string that encodes the
JSON object (`"arguments": "{\\"city\\": \\"Paris\\"}"`). Decoding it only
once the string closes would hold a whole file-writing call in memory and
send nothing meanwhile; `JsonStringDecoder` instead decodes every complete
escape at once and holds back only an escape cut short (`\\`, `\\u00`) or a
high surrogate waiting for its pair: at most 11 characters.
"""

from __future__ import annotations

import re

import orjson

_COMPLETE = re.compile(r'(?:[^\\]+|\\u[0-9a-fA-F]{4}|\\[^u])*')
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


class JsonStringDecoder:
    """`feed(raw) -> text`, `finish() -> text`; `raw` is string content
    without the quotes, in any pieces."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, raw: str) -> str:
        text = self._pending + raw
        end = _COMPLETE.match(text).end()
        surrogate = _HIGH_SURROGATE.search(text, max(0, end - 6), end)
        if surrogate is not None:
            end = surrogate.start()
        self._pending = text[end:]
        return _decode(text[:end])

    def finish(self) -> str:
        """What is left: a cut-short escape is kept as written."""
        rest, self._pending = self._pending, ""
        return _decode(rest)


def _decode(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        return orjson.loads(f'"{raw}"')
    except orjson.JSONDecodeError:
        return raw
