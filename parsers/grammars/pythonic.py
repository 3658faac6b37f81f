"""Body grammar: a Python list of keyword-argument calls, converted to JSON
arguments as it streams.

    [get_weather(city="Paris", days=2), search(query='x', tags=("a", "b"))]
    → get_weather {"city": "Paris", "days": 2}, search {"query": "x", "tags": ["a", "b"]}

Values are Python literals (`py_literal`): strings in any quotes, with
r/u/f prefixes and escapes; numbers; True/False/None (also true/false/null
with `JSON_CONSTANTS`); lists, tuples and sets become arrays, dicts
objects; `**{…}` merges into the arguments. A string streams as it is read.

A call is tentative until it is certain: `name(` followed by `)`, `**{`
or `key=` and the start of a literal. So `[docs](url)`, `[1, 2]`,
`[f('positional')]` and `[f(x=variable)]` are not calls, and the
tool-call stage returns them as content. A started call is never
retracted: if a later value is not a literal, the call ends with the
arguments read so far, closed into valid JSON, and the text from there on
is content. The `stop` marker (a special token such as
`<|tool_call_end|>`) ends the block wherever it appears, except inside
a string that closes after it (`PyString`): there it is text. With `json_calls`, a block that starts with `{` or `[{` is JSON
call objects instead (LFM2 writes both). With `bracketless`, the calls are
not in a list but follow one another, separated by whitespace (OLMo 3's
`get_weather(city="Paris")\nsearch(query="x")`), until `stop`.
"""

from __future__ import annotations

import re

import orjson

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink
from parsers.core.json_writer import JsonWriter
from parsers.core.markers import cut_short
from parsers.core.py_literal import (
    CONSTANTS,
    FAIL,
    IDENT,
    MORE,
    NUMBER_START,
    OK,
    PyString,
    read_key,
    read_number,
    value_start,
)
from parsers.grammars.json_call import JsonCalls

_WS = always_matching(r"\s*")
_CALL_OPEN = re.compile(r"(?:,\s*)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(\s*")
_CALL_OPEN_PREFIX = re.compile(r"(?:,\s*)?(?:[A-Za-z_][\w.]*\s*)?")
_KWARG = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)\s*")
_KWARG_PREFIX = re.compile(r"[A-Za-z_]\w*\s*")
_SPLAT = re.compile(r"\*\*\s*\{")
_SPLAT_PREFIX = re.compile(r"\*(?:\*\s*)?")
_JSON_START = re.compile(r"\[?\s*\{")

# A frame is [closer, kind, state]; kinds: calls (the outer list), call,
# list (lists, tuples and sets), dict, splat (a `**{…}` merged into its call).
ITEM, VALUE, SEP = "item", "value", "sep"


def render_kwargs(arguments: str) -> str:
    """JSON arguments as keyword arguments (`city='Paris', days=2`), for
    call templates."""
    return ", ".join(f"{key}={value!r}" for key, value in orjson.loads(arguments).items())


class PythonicCalls:
    def __init__(
        self,
        sink: CallSink,
        *,
        constants: dict[str, str] = CONSTANTS,
        json_calls: bool = False,
        stop: str | None = None,
        bracketless: bool = False,
    ):
        self.status = RUNNING
        self._bracketless = bracketless
        self._sink = sink
        self._constants = constants
        self._json_calls = json_calls
        self._stop = stop
        self._writer = JsonWriter()
        self._frames: list[list] = []
        self._string: PyString | None = None
        self._json: JsonCalls | None = None
        self._calls = 0
        self._call_open = False

    def step(self, buf: str, pos: int) -> int:
        n = len(buf)
        while self.status == RUNNING:
            if self._json is not None:
                pos = self._json.step(buf, pos)
                self.status = self._json.status
                return pos
            if self._string is not None:
                pos = self._read_string(buf, pos)
                if self._string is not None:
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

    def read_to_end(self, unread: str) -> int | None:
        """The output ended with `unread` held back: the end ends the token
        it cuts, as a blank would (outside a string), and a string whose
        closing quote it follows. A number or constant held back
        (`days=2`) is a value, and may make a call certain. Returns where
        in `unread` the block ended, where a `stop` marker inside a string
        that never closed ended it (the rest is read on as text)."""
        if not self._frames or self._json is not None:
            return None
        pos = 0
        if self._string is not None:  # a quote the output ended after closes the string
            self._string.at_end = True
            pos = self._read_string(unread, 0)
            if self.status != RUNNING:
                return pos
            if self._string is not None:
                return None
        self.step(unread[pos:] + " ", 0)
        return None

    def finish(self) -> None:
        if self._json is not None:
            self._json.finish()
            self.status = self._json.status
            return
        if self._call_open:
            self._writer.close_all()
        self._flush()
        self.status = DONE if self._calls else FAILED

    def _step_token(self, buf: str, pos: int) -> int | None:
        """One token at `pos` (not blank); None means "need more text".
        Lookahead stops at `end`, so that a token's fate does not depend on
        how the text was split."""
        end = min(len(buf), pos + MAX_TOKEN_CHARS)
        if not self._frames:
            return self._open_list(buf, pos, end)
        stop = self._stop
        if stop and buf.startswith(stop, pos):
            return self._stop_block(pos)
        if stop and cut_short(buf, pos, stop):
            return None
        closer, kind, state = self._frames[-1]
        char = buf[pos]
        if state == SEP:
            if kind == "calls" and (char == "," or self._bracketless):
                return self._start_call(buf, pos, end)
            if char == ",":
                self._frames[-1][2] = ITEM
                return pos + 1
            return self._close(pos) if char == closer else self._fail(pos)
        if kind == "calls":
            return self._start_call(buf, pos, end)
        if state == ITEM and char == closer:
            return self._close(pos)
        if state == ITEM and kind == "call":
            return self._start_argument(buf, pos, end)
        if state == ITEM and kind != "list":
            return self._read_key(buf, pos, end)
        return self._read_value(buf, pos, end)

    def _open_list(self, buf: str, pos: int, end: int) -> int | None:
        if self._json_calls:
            if _JSON_START.match(buf, pos, end):
                self._json = JsonCalls(self._sink)
                return pos
            if buf[pos] == "[" and _WS.match(buf, pos + 1, end).end() == end:
                return self._more(buf, pos)
        if self._bracketless:
            self._frames.append(["", "calls", ITEM])
            return pos
        if buf[pos] != "[":
            return self._fail(pos)
        self._frames.append(["]", "calls", ITEM])
        return pos + 1

    def _start_call(self, buf: str, pos: int, end: int) -> int | None:
        """At the first call or at the `,` before another: start it once it is certain."""
        head = self._call_head(buf, pos, end)
        if isinstance(head, str):
            return self._more(buf, pos) if head == MORE else self._fail(pos)
        name, after = head
        self._frames[-1][2] = SEP
        self._frames.append([")", "call", ITEM])
        self._calls += 1
        self._call_open = True
        self._sink.start(name)
        self._writer.open("{", "}")
        return after

    def _call_head(self, buf: str, pos: int, end: int) -> str | tuple[str, int]:
        match = _CALL_OPEN.match(buf, pos, end)
        if match is None or match.end() == end:
            return MORE if match or _CALL_OPEN_PREFIX.fullmatch(buf, pos, end) else FAIL
        after = match.end()
        if buf[after] == ")":
            return match.group(1), after
        if buf[after] == "*":
            if _SPLAT.match(buf, after, end):
                return match.group(1), after
            return MORE if _SPLAT_PREFIX.fullmatch(buf, after, end) else FAIL
        keyword = _KWARG.match(buf, after, end)
        if keyword is None:
            return MORE if _KWARG_PREFIX.fullmatch(buf, after, end) else FAIL
        verdict = value_start(buf, keyword.end(), end, self._constants)
        return (match.group(1), after) if verdict == OK else verdict

    def _start_argument(self, buf: str, pos: int, end: int) -> int | None:
        """`key=` before a literal, or `**{`."""
        if buf[pos] == "*":
            splat = _SPLAT.match(buf, pos, end)
            if splat is None:
                return self._more(buf, pos) if _SPLAT_PREFIX.fullmatch(buf, pos, end) else self._fail(pos)
            self._frames.append(["}", "splat", ITEM])
            return splat.end()
        keyword = _KWARG.match(buf, pos, end)
        if keyword is None:
            return self._more(buf, pos) if _KWARG_PREFIX.fullmatch(buf, pos, end) else self._fail(pos)
        verdict = value_start(buf, keyword.end(), end, self._constants)
        if verdict != OK:
            return self._more(buf, pos) if verdict == MORE else self._fail(pos)
        self._writer.key(keyword.group(1))
        self._frames[-1][2] = VALUE
        return keyword.end()

    def _read_key(self, buf: str, pos: int, end: int) -> int | None:
        key = read_key(buf, pos, end, self._constants)
        if key == MORE:
            return self._more(buf, pos)
        if isinstance(key, str) or buf[key[1]] != ":":  # FAIL
            return self._fail(pos)
        self._writer.key(key[0])
        self._frames[-1][2] = VALUE
        return key[1] + 1

    def _read_value(self, buf: str, pos: int, end: int) -> int | None:
        verdict = value_start(buf, pos, end, self._constants)
        if verdict != OK:
            return self._more(buf, pos) if verdict == MORE else self._fail(pos)
        char = buf[pos]
        if char in "[(":
            self._writer.open("[", "]")
            self._frames.append(["]" if char == "[" else ")", "list", ITEM])
            return pos + 1
        if char == "{":
            return self._open_brace(buf, pos, end)
        if char in NUMBER_START:
            return self._scalar(*read_number(buf, pos, end))  # value_start judged it
        word = IDENT.match(buf, pos, end)
        if word is None:
            return self._open_string(buf, pos, pos, raw=False)
        if buf[word.end()] in "'\"":
            return self._open_string(buf, pos, word.end(), raw="r" in word.group().lower())
        return self._scalar(self._constants[word.group()], word.end())

    def _scalar(self, json_text: str, end: int) -> int:
        self._writer.scalar(json_text)
        self._frames[-1][2] = SEP
        return end

    def _open_string(self, buf: str, pos: int, quote_at: int, raw: bool) -> int | None:
        triple = buf[quote_at] * 3
        if buf.startswith(triple, quote_at):
            closer = triple
        elif cut_short(buf, quote_at, triple):
            return self._more(buf, pos)  # `''` may open a triple-quoted string
        else:
            closer = triple[0]
        self._writer.open_string()
        closers = "".join(frame[0] for frame in reversed(self._frames))
        self._string = PyString(closer, raw, self._stop, closers, in_call=self._frames[-1][1] == "call")
        return quote_at + len(closer)

    def _read_string(self, buf: str, pos: int) -> int:
        string = self._string
        assert string is not None, "the string state has a string"
        pos = string.read(buf, pos, self._writer)
        if string.stopped:
            return self._stop_block(pos)
        if string.done:
            self._string = None
            self._frames[-1][2] = SEP
        return pos

    def _open_brace(self, buf: str, pos: int, end: int) -> int | None:
        """`{` opens a dict, or a set (a JSON array) when its first item is
        not followed by `:`."""
        first = _WS.match(buf, pos + 1, end).end()
        if first == end:
            return self._more(buf, pos)
        is_dict = buf[first] == "}"
        if not is_dict:
            key = read_key(buf, first, end, self._constants)
            if key == MORE:
                return self._more(buf, pos)
            if isinstance(key, str) or buf[key[1]] not in ":,}":  # FAIL
                return self._fail(pos)
            is_dict = buf[key[1]] == ":"
        self._writer.open(*("{}" if is_dict else "[]"))
        self._frames.append(["}", "dict" if is_dict else "list", ITEM])
        return pos + 1

    def _close(self, pos: int) -> int:
        _, kind, _ = self._frames.pop()
        if kind == "calls":
            self.status = DONE
            return pos + 1
        if kind != "splat":
            self._writer.close()
        if kind == "call":
            self._flush()
            self._call_open = False
            self._sink.end()
        self._frames[-1][2] = SEP
        return pos + 1

    def _more(self, buf: str, pos: int) -> int | None:
        """Hold the text back, unless it is too long to be one token."""
        return self._fail(pos) if len(buf) - pos > MAX_TOKEN_CHARS else None

    def _fail(self, pos: int) -> int:
        if self._call_open:
            self._writer.close_all()
            self._flush()
        self.status = FAILED
        return pos

    def _stop_block(self, pos: int) -> int:
        self._string = None
        if self._call_open:
            self._writer.close_all()
            self._flush()
            self._call_open = False
            self._sink.end()
        self.status = DONE if self._calls else FAILED
        return pos

    def _flush(self) -> None:
        text = self._writer.take()
        if text:
            self._sink.args(text)
