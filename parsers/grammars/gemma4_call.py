"""Body grammar: Gemma 4's `call:NAME{key:value,…}`, converted to JSON
arguments as it streams.

    call:search{query:<|"|>louvre, paris<|"|>,tags:[<|"|>a<|"|>],exact:true,n:2}
    → search {"query": "louvre, paris", "tags": ["a"], "exact": true, "n": 2}

Keys are bare. Strings sit between `<|"|>` delimiters and stream as they
arrive. Other values are bare words: `true`/`false`, numbers (a float if
there is a `.`), any other word a string; `{…}` and `[…]` nest. A bare
word that runs into `<|"|>` is a string whose opening delimiter the model
left out (`query:Paris, France<|"|>`); in an object a comma belongs to
such a string when no `key:` comes before the delimiter. A bare word still
undecided after `MAX_TOKEN_CHARS` is taken for such a string, and streams.

A bare `null` (`none`, `nil`, any case) is JSON null, as vLLM reads it,
except for a top-level parameter whose schema allows only a string: it
stays the text `"null"`. A parameter whose schema allows null or is not a
string (an integer, a nullable string) gets null; see `coerce.to_json`.

The call starts at `{`. After that it is never retracted: malformed text
ends it with the arguments read so far, closed into valid JSON, and the
rest is content. `<tool_call|>` ends the call wherever it appears outside
a string; inside an open `<|"|>` string it is text, as a model writing
about tool calls writes it (issue 43's round trip: Gemma 4's own template
writes it there), so a string the output never closes keeps every
character to the end.

The string delimiter and the end marker are data (`Gemma4Delimiters`):
FunctionGemma writes the same notation with `<escape>` around strings,
ended by `<end_function_call>` (`parsers.formats.tool_functiongemma`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

import orjson

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink
from parsers.core.coerce import to_json
from parsers.core.json_writer import JsonWriter, json_string_body
from parsers.core.markers import MarkerSet, cut_short, marker_set

QUOTE = '<|"|>'
END = "<tool_call|>"
_WS = always_matching(r"\s*")
_HEAD = re.compile(r"call:\s*([\w.\-]+)\s*\{")
_HEAD_PREFIX = re.compile(r"(?:c|ca|cal|call|call:\s*[\w.\-]*\s*)?")
_KEY = re.compile(r"([^:{}\[\],<]+):")
_KEY_PREFIX = re.compile(r"[^:{}\[\],<]*")


@dataclass(frozen=True)
class Gemma4Delimiters:
    """The string delimiter and the block's end marker, and what finds them:
    `<|"|>` and `<tool_call|>` for Gemma 4, `<escape>` and
    `<end_function_call>` for FunctionGemma."""

    quote: str
    end: str

    @cached_property
    def string_end(self) -> re.Pattern:
        return re.compile(re.escape(self.quote))

    @cached_property
    def bare_end(self) -> re.Pattern:
        return re.compile(f"{re.escape(self.quote)}|{re.escape(self.end)}|[,}}\\]]")

    @cached_property
    def after_comma(self) -> re.Pattern:
        return re.compile(f"{re.escape(self.quote)}|{re.escape(self.end)}|[:}}\\]]")

    @cached_property
    def markers(self) -> MarkerSet:
        return marker_set(self.quote, self.end)


GEMMA4 = Gemma4Delimiters(QUOTE, END)
_NULL_WORDS = ("null", "none", "nil")
ITEM, VALUE, SEP = "item", "value", "sep"


def render_gemma4(arguments: str, quote: str = QUOTE) -> str:
    """JSON arguments in Gemma 4's notation (strings between `quote`), for call templates."""
    return _render(orjson.loads(arguments), quote)


def _render(value, quote: str) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{_render(item, quote)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(item, quote) for item in value) + "]"
    if isinstance(value, str):
        return quote + value + quote
    return orjson.dumps(value).decode()


def bare_json(word: str) -> str:
    """A bare word's JSON, as SGLang types it."""
    word = word.strip()
    if word in ("true", "false"):
        return word
    if word.lower() in _NULL_WORDS:
        return "null"
    try:
        number = float(word) if "." in word else int(word)
    except ValueError:
        number = None
    if number is None or not math.isfinite(number):
        return f'"{json_string_body(word)}"'
    return repr(number)


class Gemma4Call:
    def __init__(self, sink: CallSink, delimiters: Gemma4Delimiters = GEMMA4):
        self.status = RUNNING
        self._sink = sink
        self._marks = delimiters
        self._writer = JsonWriter()
        self._frames: list[list] = []  # [closer, state]; `}` objects, `]` arrays
        self._started = False
        self._types: dict = {}  # top-level parameter -> JSON types its schema allows
        self._key: str | None = None  # the top-level parameter being read

    def step(self, buf: str, pos: int) -> int:
        n = len(buf)
        while self.status == RUNNING:
            if self._writer.in_string:
                pos = self._read_string(buf, pos)
                if self._writer.in_string:
                    break
                continue
            pos = _WS.match(buf, pos).end()
            if pos == n:
                break
            new_pos = self._step_token(buf, pos)
            if new_pos is None:
                break
            pos = new_pos
        self._flush()
        return pos

    def finish(self) -> None:
        self._flush()
        self.status = DONE if self._started else FAILED

    def _step_token(self, buf: str, pos: int) -> int | None:
        """One token at `pos` (not blank); None means "need more text".
        Lookahead stops at `end`, so that a token's fate does not depend on
        how the text was split."""
        end = min(len(buf), pos + MAX_TOKEN_CHARS)
        if not self._started:
            return self._read_head(buf, pos, end)
        if buf.startswith(self._marks.end, pos):
            return self._end_block(pos)
        if cut_short(buf, pos, self._marks.end) or cut_short(buf, pos, self._marks.quote):
            return None
        closer, state = self._frames[-1]
        char = buf[pos]
        if state == SEP:
            if char == ",":
                self._frames[-1][1] = ITEM
                return pos + 1
            if char == closer:
                return self._close(pos)
            # A key right after a value, its comma left out (vLLM's FunctionGemma tests write
            # `{city:<escape>NYC<escape>unit:<escape>celsius<escape>}`,
            # tests/tool_parsers/test_functiongemma_tool_parser.py): the next argument.
            return self._read_key(buf, pos, end) if closer == "}" else self._fail(pos)
        if state == ITEM and char == closer:
            return self._close(pos)
        if state == ITEM and closer == "}":
            return self._read_key(buf, pos, end)
        return self._read_value(buf, pos, end)

    def _read_head(self, buf: str, pos: int, end: int) -> int | None:
        head = _HEAD.match(buf, pos, end)
        if head is None:
            if _HEAD_PREFIX.fullmatch(buf, pos, end) and end == len(buf):
                return None
            self.status = FAILED
            return pos
        self._started = True
        self._sink.start(head.group(1))
        parameter_types = getattr(self._sink, "parameter_types", None)
        self._types = parameter_types(head.group(1)) if parameter_types else {}
        self._open("{", "}")
        return head.end()

    def _read_key(self, buf: str, pos: int, end: int) -> int | None:
        if buf.startswith(self._marks.quote, pos):
            return self._read_quoted_key(buf, pos)
        key = _KEY.match(buf, pos, end)
        if key is None or not key.group(1).strip():
            if key is None and _KEY_PREFIX.fullmatch(buf, pos, end):
                return self._more(buf, pos)
            return self._fail(pos)
        self._writer.key(key.group(1).strip())
        self._key = key.group(1).strip() if len(self._frames) == 1 else None
        self._frames[-1][1] = VALUE
        return key.end()

    def _read_quoted_key(self, buf: str, pos: int) -> int | None:
        """A key written as a string, `{<|"|>3<|"|>:…}`, as Gemma 4's template writes a
        key that is no identifier (vLLM tests/tool_parsers/test_gemma4_tool_parser.py,
        test_string_delimited_dict_key)."""
        quote = self._marks.quote
        close = buf.find(quote, pos + len(quote))
        colon = _WS.match(buf, close + len(quote)).end() if close != -1 else len(buf)
        if colon == len(buf) or close - pos > MAX_TOKEN_CHARS:
            return self._more(buf, pos)
        if buf[colon] != ":":
            return self._fail(pos)
        key = buf[pos + len(quote) : close]
        self._writer.key(key)
        self._key = key if len(self._frames) == 1 else None
        self._frames[-1][1] = VALUE
        return colon + 1

    def _read_value(self, buf: str, pos: int, end: int) -> int | None:
        char = buf[pos]
        if buf.startswith(self._marks.quote, pos):
            self._writer.open_string()
            return pos + len(self._marks.quote)
        if char in "{[":
            self._open(char, "}" if char == "{" else "]")
            return pos + 1
        return self._read_bare(buf, pos, end)

    def _read_bare(self, buf: str, pos: int, end: int) -> int | None:
        """A bare word, up to `,` `}` `]` — or a string up to `<|"|>`."""
        hit = self._marks.bare_end.search(buf, pos, end)
        comma = None
        if hit is not None and hit.group() == "," and self._frames[-1][0] == "}":
            comma = hit.start()
            hit = self._marks.after_comma.search(buf, hit.end(), end)
        if hit is None:
            if end == len(buf):
                return None
            self._writer.open_string()  # long and undecided: a string missing its opening delimiter
            return pos
        stop, token = hit.start(), hit.group()
        if comma is not None and not (token == self._marks.quote and buf[comma + 1 : stop].strip()):
            stop, token = comma, ","
        self._frames[-1][1] = SEP
        if token == self._marks.quote:
            self._writer.open_string()
            self._writer.string(buf[pos:stop])
            self._writer.close_string()
            return stop + len(self._marks.quote)
        self._writer.scalar(self._bare_value(buf[pos:stop]))
        return stop

    def _bare_value(self, word: str) -> str:
        """A bare word's JSON; a null word is typed by its parameter's schema."""
        types = self._types.get(self._key) if self._key is not None and len(self._frames) == 1 else None
        if types and word.strip().lower() in _NULL_WORDS:
            return to_json(word, types)
        return bare_json(word)

    def _read_string(self, buf: str, pos: int) -> int:
        hit = self._marks.string_end.search(buf, pos)
        end = hit.start() if hit else self._marks.markers.safe_end(buf, pos)
        if end > pos:
            self._writer.string(buf[pos:end])
        if hit is None:
            return end
        self._writer.close_string()
        self._frames[-1][1] = SEP
        return hit.end()

    def _open(self, opener: str, closer: str) -> None:
        self._writer.open(opener, closer)
        self._frames.append([closer, ITEM])

    def _close(self, pos: int) -> int:
        self._frames.pop()
        self._writer.close()
        if self._frames:
            self._frames[-1][1] = SEP
        else:
            self._flush()
            self._sink.end()
            self.status = DONE
        return pos + 1

    def _more(self, buf: str, pos: int) -> int | None:
        return self._fail(pos) if len(buf) - pos > MAX_TOKEN_CHARS else None

    def _fail(self, pos: int) -> int:
        self._writer.close_all()
        self._flush()
        self.status = FAILED
        return pos

    def _end_block(self, pos: int) -> int:
        """`<tool_call|>` inside the arguments: the call ends here."""
        self._writer.close_all()
        self._flush()
        self._sink.end()
        self.status = DONE
        return pos

    def _flush(self) -> None:
        text = self._writer.take()
        if text:
            self._sink.args(text)
