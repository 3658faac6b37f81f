"""Decode the inside of a JSON string as it streams in.

Some models write a call's arguments as a JSON string that encodes the
JSON object (`"arguments": "{\\"city\\": \\"Paris\\"}"`). Decoding it only
once the string closes would hold a whole file-writing call in memory and
send nothing meanwhile; `JsonStringDecoder` instead decodes every complete
escape at once and holds back only an escape cut short (`\\`, `\\u00`) or a
high surrogate waiting for its pair: at most 11 characters.
"""

from __future__ import annotations

import json
import re

from parsers.core.always_matching import always_matching

_COMPLETE = always_matching(r"(?:[^\\]+|\\u[0-9a-fA-F]{4}|\\[^u])*")
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


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.", re.DOTALL)


def _decode(raw: str) -> str:
    """Raw control characters are taken as they are; escapes JSON does not
    know (`\\x`) or cannot turn into text (a lone surrogate) are kept as
    written, the others decoded, one by one, so that the result never
    depends on where the text was cut."""
    if "\\" not in raw:
        return raw
    try:
        text = json.loads(f'"{raw}"', strict=False)
    except ValueError:
        return _ESCAPE.sub(_decode_escape, raw)
    return _ESCAPE.sub(_decode_escape, raw) if _LONE_SURROGATE.search(text) else text


def _decode_escape(match: re.Match) -> str:
    """One escape decoded; unknown ones, and a surrogate without its pair
    (which no UTF-8 output can carry), stay as written."""
    try:
        text = json.loads(f'"{match.group()}"')
    except ValueError:
        return match.group()
    return match.group() if _LONE_SURROGATE.search(text) else text
