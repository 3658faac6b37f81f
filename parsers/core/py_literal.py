"""Python literal tokens in streamed text, read as JSON.

The pythonic body grammar reads values with these. A reader looks at
`buf[pos:end]` and answers `MORE` when the text ends before the token can
be decided (the caller holds the text back and asks again, or gives up if
`end` was a bound on the token's length rather than the end of the text),
`FAIL` when the text is not a literal, or what it read and where it ends.
Only `PyString` keeps state: string bodies stream, however long.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

from parsers.core.always_matching import always_matching
from parsers.core.call_body import MAX_TOKEN_CHARS
from parsers.core.json_writer import JsonWriter
from parsers.core.markers import cut_short, marker_set

OK, MORE, FAIL = "ok", "more", "fail"

CONSTANTS = {"True": "true", "False": "false", "None": "null"}
JSON_CONSTANTS = {**CONSTANTS, "true": "true", "false": "false", "null": "null"}
# Lower-cased string prefixes with a JSON form; b'…' (bytes) has none.
STRING_PREFIXES = frozenset({"r", "u", "f", "rf", "fr"})
NUMBER_START = "+-.0123456789"

_WS = always_matching(r"\s*")
IDENT = re.compile(r"[A-Za-z_]\w*")
# Numbers, identifiers and junk alike: the token is judged by int()/float().
_NUMBERISH = always_matching(r"[+-]?(?:[\w.]|(?<=[eE])[+-])*")
_ESCAPE = re.compile(
    r"\\(?:N\{[^}\n]{1,100}\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL
)
_PARTIAL_ESCAPE = re.compile(
    r"\\(?:N(?:\{[^}\n]{0,100})?|x[0-9a-fA-F]?|u[0-9a-fA-F]{0,3}|U[0-9a-fA-F]{0,7}|[0-7]{1,2})?\Z"
)
_SIMPLE_ESCAPES = {
    "\n": "",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_NEXT_KEYWORD = re.compile(r"[A-Za-z_]\w*\s*=(?!=)|\*\*|\)")
_NEXT_KEYWORD_PREFIX = re.compile(r"[A-Za-z_]\w*\s*=?|\*")
_KEY_STRING = re.compile(r"""([rRuU]?)(?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)")""")
_KEY_STRING_OPEN = re.compile(r"""[rRuU]?['"]""")


def value_start(buf: str, pos: int, end: int, constants: dict[str, str]) -> str:
    """Whether a literal starts at `pos`: OK, MORE or FAIL (a name, bytes,
    an operator…). A number is judged whole."""
    if pos == end:
        return MORE
    char = buf[pos]
    if char in "'\"[({":
        return OK
    if char in NUMBER_START:
        number = read_number(buf, pos, end)
        return number if number in (MORE, FAIL) else OK
    word = IDENT.match(buf, pos, end)
    if word is None:
        return FAIL
    if word.end() == end:
        return MORE
    if buf[word.end()] in "'\"":
        return OK if word.group().lower() in STRING_PREFIXES else FAIL
    return OK if word.group() in constants else FAIL


def number_json(token: str) -> str | None:
    """A Python number token as JSON (`07` → 7, `+7` → 7, `1_000` → 1000,
    `0x1F` → 31), or None if it is not a finite number."""
    digits = token.lstrip("+-")
    try:
        if digits[:2].lower() in ("0x", "0o", "0b"):
            return str(int(token, 0))
        if any(c in digits for c in ".eE"):
            value = float(token)
            return repr(value) if math.isfinite(value) else None
        return str(int(token))
    except ValueError:
        return None


def read_number(buf: str, pos: int, end: int) -> str | tuple[str, int]:
    token = _NUMBERISH.match(buf, pos, end)
    if token.end() == end:
        return MORE
    json_text = number_json(token.group())
    return FAIL if json_text is None else (json_text, token.end())


def read_key(buf: str, pos: int, end: int, constants: dict[str, str]) -> str | tuple[str, int]:
    """A dict key (a one-line string, a number or a constant) and the index
    after the blanks that follow it. Non-string keys become their JSON text,
    as json.dumps writes them."""
    string = _KEY_STRING.match(buf, pos, end)
    if string is not None:
        body = string.group(2) if string.group(2) is not None else string.group(3)
        key = body if "r" in string.group(1).lower() else _ESCAPE.sub(_decode_escape, body)
        after = string.end()
    elif _KEY_STRING_OPEN.match(buf, pos, end):
        return MORE
    else:
        token = _NUMBERISH.match(buf, pos, end)
        if token.end() == end:
            return MORE
        key = constants.get(token.group()) or number_json(token.group())
        if key is None:
            return FAIL
        after = token.end()
    after = _WS.match(buf, after, end).end()
    return MORE if after == end else (key, after)


def _decode_escape(match: re.Match) -> str:
    """A Python escape sequence's text; unknown or invalid ones stay as
    written (`\\d` → `\\d`), as Python keeps them."""
    text = match.group()
    kind = text[1]
    if kind in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[kind]
    if kind in "01234567":
        return chr(int(text[1:], 8))
    if kind in "xuU" and len(text) > 2 and int(text[2:], 16) <= 0x10FFFF:
        return chr(int(text[2:], 16))
    if kind == "N" and len(text) > 2:
        try:
            return unicodedata.lookup(text[3:-1])
        except KeyError:
            return text
    return text


@lru_cache(maxsize=16)
def _string_stops(quote: str, stop: str | None) -> re.Pattern:
    return re.compile(f"[\\\\{quote}]" + (f"|{re.escape(stop)}" if stop else ""))


class PyString:
    """The rest of a string literal after its opening quote(s), streamed into
    a `JsonWriter`. A closing quote counts only when the text after it goes
    on as the containers around the string do: blanks, then the `stop`
    marker, or a `,` (as an argument, `in_call`: one that a keyword
    argument, `**` or `)` follows), or the innermost container's closer followed by a `,` or
    the next container's closer. `closers` are the open containers'
    closers, innermost first (`")]"` for an argument of a call in a list;
    an empty closer is a container closed by nothing: anything may follow).
    Any other quote is one the model did not escape, and stays in the text
    (`'python3 -c "f(x, sep='\\,')"'` is one string). The `stop` marker is
    text when the string closes within `MAX_TOKEN_CHARS` after it (a value
    runs to its own quote, as the chat templates write it: `note(text='a
    </function_calls> b')`); otherwise it ends the block. At the end of the
    output (`at_end`), a quote the text ran out after closes the string."""

    __slots__ = (
        "done",
        "stopped",
        "at_end",
        "_closer",
        "_raw",
        "_stop",
        "_stops",
        "_stop_prefixes",
        "_closers",
        "_in_call",
    )

    def __init__(self, closer: str, raw: bool, stop: str | None, closers: str = "", in_call: bool = False):
        self.done = False
        self.stopped = False
        self.at_end = False
        self._closer = closer
        self._raw = raw
        self._stop = stop
        self._stops = _string_stops(closer[0], stop)
        self._stop_prefixes = marker_set(stop) if stop else None
        self._closers = closers
        self._in_call = in_call

    def read(self, buf: str, pos: int, writer: JsonWriter) -> int:
        while True:
            hit = self._stops.search(buf, pos)
            if hit is not None:
                end = hit.start()
            else:
                end = self._stop_prefixes.safe_end(buf, pos) if self._stop_prefixes else len(buf)
            if end > pos:
                writer.string(buf[pos:end])
            if hit is None:
                return end
            pos, token = end, hit.group()
            if token == "\\":
                escape = self._escape(buf, pos)
                if escape is None:
                    return pos
                writer.string(escape[0])
                pos = escape[1]
            elif token == self._stop:
                closes = self._closes_later(buf, pos + len(token))
                if closes == MORE:
                    return pos
                if not closes:
                    self.stopped = True
                    return pos
                writer.string(token)
                pos += len(token)
            else:
                closes = self._closes(buf, pos)
                if closes == MORE:
                    return pos
                if closes:
                    writer.close_string()
                    self.done = True
                    return pos + len(self._closer)
                writer.string(token)
                pos += 1

    def _escape(self, buf: str, pos: int) -> tuple[str, int] | None:
        if _PARTIAL_ESCAPE.match(buf, pos):
            return None
        if self._raw:
            return buf[pos : pos + 2], pos + 2
        match = _ESCAPE.match(buf, pos)
        assert match is not None, "a backslash with a character after it is an escape"
        return _decode_escape(match), match.end()

    def _closes(self, buf: str, pos: int) -> bool | str:
        if not buf.startswith(self._closer, pos):
            return MORE if cut_short(buf, pos, self._closer) and not self.at_end else False
        after = pos + len(self._closer)
        return self._goes_on(buf, after, 0, min(len(buf), after + MAX_TOKEN_CHARS))

    def _closes_later(self, buf: str, pos: int) -> bool | str:
        """Whether the string closes within `MAX_TOKEN_CHARS` after `pos`,
        deciding on that window alone, so that the answer does not depend
        on how the text was split."""
        end = min(len(buf), pos + MAX_TOKEN_CHARS)
        quotes = _string_stops(self._closer[0], None)
        while (hit := quotes.search(buf, pos, end)) is not None:
            if hit.group() == "\\":
                pos = hit.start() + 2
                continue
            closes = self._closes(buf, hit.start())
            if closes:
                return closes
            pos = hit.start() + 1
        if end < len(buf) or self.at_end:
            return False
        return MORE

    def _ran_out(self, buf: str, end: int) -> bool | str:
        """Undecided at `end`: wait for more text, unless the lookahead
        window (bounded, so that no text is scanned twice without limit)
        is spent, or the output has ended."""
        if end < len(buf):
            return False
        return True if self.at_end else MORE

    def _goes_on(self, buf: str, pos: int, level: int, end: int) -> bool | str:
        """Whether the text at `pos` goes on as the container `level` deep
        (0: the string's own) does after one of its items, deciding before
        `end`."""
        closers = self._closers
        if level >= len(closers) or not closers[level]:
            return True
        follower = _WS.match(buf, pos, end).end()
        if follower == end:
            return self._ran_out(buf, end)
        if self._stop and buf.startswith(self._stop, follower):
            return True
        if self._stop and cut_short(buf, follower, self._stop):
            return self._ran_out(buf, len(buf))
        char = buf[follower]
        if char == ",":
            return self._next_item(buf, follower + 1, end) if level == 0 and self._in_call else True
        if char == closers[level]:
            return True if level > 0 else self._goes_on(buf, follower + 1, level + 1, end)
        return False

    def _next_item(self, buf: str, pos: int, end: int) -> bool | str:
        """After a `,` inside a call: another keyword argument, `**{…}` or
        the call's `)`."""
        start = _WS.match(buf, pos, end).end()
        if _NEXT_KEYWORD.match(buf, start, end):
            return True
        if start == end or _NEXT_KEYWORD_PREFIX.fullmatch(buf, start, end):
            return self._ran_out(buf, end)
        return False
