"""Body grammar: a JSON call object, `{"name": …, "arguments": {…}}`, or
a JSON array of them.

Used by every format whose call body is one JSON object naming the
function (Qwen, Hermes, Llama 3, InternLM, …). The object's own keys are
read token by token (they are short); the arguments value is streamed as
verbatim slices of the model's text while `JsonValueScanner` finds its end,
so a 64 KB argument is never re-read.

The call is announced (`sink.start`) as soon as the name is read. Until
then nothing is emitted, so a body that turns out malformed can still be
returned as content by the tool-call stage.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink
from parsers.core.json_scan import JsonValueScanner
from parsers.core.json_string import JsonStringDecoder
from parsers.core.json_writer import json_string_body
from parsers.core.py_repr import PyReprEnd, repr_json

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_WHITESPACE = always_matching(r"\s*")


class JsonCallObject:
    """Incremental reader of one `{"name": …, "arguments": …}` object."""

    def __init__(
        self,
        sink: CallSink,
        name_keys: tuple[str, ...] = ("name",),
        args_keys: tuple[str, ...] = ("arguments", "parameters"),
        accepts: Callable[[str], bool] | None = None,
        python_arguments: bool = False,
    ):
        self.status = RUNNING
        self.started = False
        self._sink = sink
        self._accepts = accepts
        self._name: str | None = None
        self._args_key_seen = False
        self._name_keys = name_keys
        self._args_keys = args_keys
        self._state = "open"
        self._key = ""
        self._value: JsonValueScanner | None = None
        self._value_start = 0
        self._early_args: list[str] = []
        self._args_seen = False
        self._string_args: StringArguments | None = None
        self._string_open = False
        self._null_args: list[str] | None = None
        # `python_arguments`: arguments written as a Python dict (`{'city': …}`)
        # are read whole as JSON (`parsers.core.py_repr`).
        self._python_arguments = python_arguments
        self._py_args: list[str] | None = None
        self._py_end = PyReprEnd()

    def step(self, buf: str, pos: int) -> int:
        """Consume what can be decided of `buf[pos:]`; return the new position."""
        n = len(buf)
        while self.status == RUNNING:
            if self._state == "value":
                pos = self._step_value(buf, pos)
                if self._state == "value":
                    return pos
                continue
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == n:
                return pos
            new_pos = self._step_token(buf, pos)
            if new_pos is None:
                return pos
            pos = new_pos
        return pos

    def finish(self) -> None:
        """The text ended inside the object: keep what was committed."""
        if self._string_args is not None:
            decoder, self._string_args = self._string_args, None
            self._forward_args(decoder.finish())
        if self._null_args is not None:
            self._end_null_args()
        if self._py_args is not None:
            self._end_py_args()
        self.status = DONE if self.started else FAILED

    def _step_token(self, buf: str, pos: int) -> int | None:
        """One structural token; None means "need more text"."""
        char = buf[pos]
        state = self._state
        if state == "open" and char == "{":
            self._state = "key"
        elif state == "key" and char == '"':
            return self._read_key(buf, pos)
        elif state in ("key", "next") and char == "}":
            self._close()
        elif state == "next" and char == ",":
            self._state = "key"
        elif state == "colon" and char == ":":
            self._state = "value"
            self._value = JsonValueScanner()
        else:
            self.status = FAILED
            return pos
        return pos + 1

    def _read_key(self, buf: str, pos: int) -> int | None:
        token = _read_string(buf, pos)
        if token is None:
            if len(buf) - pos > MAX_TOKEN_CHARS:
                self.status = FAILED
                return pos
            return None
        self._key = token[0]
        self._state = "colon"
        return token[1]

    def _step_value(self, buf: str, pos: int) -> int:
        if self._key in self._name_keys:
            return self._read_name(buf, pos)
        if self._py_args is not None:
            return self._step_py_args(buf, pos)
        value = self._value
        assert value is not None, "the colon made a scanner"
        if not value.started:
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if self._key in self._args_keys and not self._args_key_seen:
                self._args_key_seen = True
                self._start_when_certain()
                if self.status == FAILED:
                    return pos
            if self._key in self._args_keys and buf[pos] == '"':
                self._string_args = StringArguments()
            elif self._key in self._args_keys and buf[pos] == "n":
                self._null_args = []
            elif self._key in self._args_keys and buf[pos] == "{" and self._python_arguments:
                kind = _dict_kind(buf, pos)
                if kind is None:
                    return pos  # the first key's quote is not written yet
                if kind == "python":
                    self._py_args = []
        if self._py_args is not None:
            return self._step_py_args(buf, pos)
        start = pos
        pos = value.scan(buf, pos)
        if self._null_args is not None:
            self._null_args.append(buf[start:pos])
            if value.done:
                self._end_null_args()
        elif self._key in self._args_keys:
            self._forward_args(self._decoded(buf[start:pos], value.done))
        if value.done:
            self._state = "next"
        return pos

    def _read_name(self, buf: str, pos: int) -> int:
        pos = _WHITESPACE.match(buf, pos).end()
        if pos == len(buf):
            return pos
        token = _read_string(buf, pos) if buf[pos] == '"' else None
        if token is None:
            if buf[pos] != '"' or len(buf) - pos > MAX_TOKEN_CHARS:
                self.status = FAILED
            return pos
        if self._name is None:
            self._name = token[0]
            self._start_when_certain()
            if self.status == FAILED:
                return pos
        self._state = "next"
        return token[1]

    def _start_when_certain(self) -> None:
        """Announce the call once its name is read; with `accepts`, only
        once its arguments key is read too and `accepts(name)` holds."""
        name = self._name
        if self.started or name is None:
            return
        if self._accepts is not None:
            if not self._args_key_seen:
                return
            if not self._accepts(name):
                self.status = FAILED
                return
        self.started = True
        self._sink.start(name)
        if self._early_args:
            self._sink.args("".join(self._early_args))

    def _forward_args(self, text: str) -> None:
        if not text:
            return
        self._args_seen = True
        if self.started:
            self._sink.args(text)
        else:
            self._early_args.append(text)

    def _end_null_args(self) -> None:
        """`"arguments": null` means no arguments (`{}`, written at the
        call's end); any other bare word is forwarded as written."""
        assert self._null_args is not None, "called only while a bare word is read"
        raw, self._null_args = "".join(self._null_args), None
        if raw != "null":
            self._forward_args(raw)

    def _step_py_args(self, buf: str, pos: int) -> int:
        """A Python dict for arguments: held until it closes, then its JSON;
        past the bounds, or not a literal, its text as written."""
        assert self._py_args is not None, "called while a Python dict is read"
        end = self._py_end.scan(buf, pos)
        self._py_args.append(buf[pos:end])
        if self._py_end.too_long:
            self._forward_args("".join(self._py_args))
            self._py_args.clear()
        if self._py_end.done:
            self._end_py_args()
            self._state = "next"
        return end

    def _end_py_args(self) -> None:
        assert self._py_args is not None, "called while a Python dict is read"
        raw, self._py_args = "".join(self._py_args), None
        converted = None if self._py_end.too_long or not self._py_end.done else repr_json(raw)
        self._forward_args(raw if converted is None else converted)

    def _decoded(self, raw: str, closed: bool) -> str:
        """Arguments text as forwarded: a string-encoded value goes through
        `StringArguments` as it streams in (its quotes dropped)."""
        decoder = self._string_args
        if decoder is None:
            return raw
        if not self._string_open:
            raw, self._string_open = raw[1:], True
        if not closed:
            return decoder.feed(raw)
        self._string_args = None
        return decoder.feed(raw[:-1]) + decoder.finish()

    def _close(self) -> None:
        if not self.started:
            self.status = FAILED
            return
        if not self._args_seen:
            self._sink.args("{}")
        self._sink.end()
        self.status = DONE


class StringArguments:
    """`"arguments": "…"`, decoded as it streams. A string that holds a
    serialized object (Granite 4 writes its arguments so) passes through
    as the JSON text it holds; any other string (`"hello"`) is re-encoded
    as a JSON string, so the arguments stay JSON. Leading blanks are held
    until the first other character decides."""

    def __init__(self) -> None:
        self._decoder = JsonStringDecoder()
        self._serialized: bool | None = None
        self._blanks = ""

    def feed(self, raw: str) -> str:
        return self._route(self._decoder.feed(raw))

    def finish(self) -> str:
        text = self._route(self._decoder.finish())
        return text + '"' if self._serialized is False else text

    def _route(self, text: str) -> str:
        if self._serialized is None:
            text = self._blanks + text
            if not text.strip():
                self._blanks = text
                return ""
            self._blanks = ""
            self._serialized = text.lstrip()[0] == "{"
            if not self._serialized:
                return '"' + json_string_body(text)
            return text
        return text if self._serialized else json_string_body(text)


def _dict_kind(buf: str, pos: int) -> str | None:
    """`python` when the object at `pos` opens with a single-quoted key,
    as Python's repr writes any key without a `'` in it; else `json`;
    None while the text ends before its first key's quote."""
    first = _WHITESPACE.match(buf, pos + 1).end()
    if first == len(buf):
        return None
    return "python" if buf[first] == "'" else "json"


def _read_string(buf: str, pos: int) -> tuple[str, int] | None:
    """A complete JSON string token at `pos`, decoded, and the index after it."""
    match = _JSON_STRING.match(buf, pos)
    if match is None:
        return None
    try:
        value = orjson.loads(match.group())
    except orjson.JSONDecodeError:
        return None
    return value, match.end()


class JsonCalls:
    """One JSON call object, or a JSON array of call objects; `item` reads
    one object (default `JsonCallObject`, given the `keys`)."""

    def __init__(self, sink: CallSink, item=JsonCallObject, **keys):
        self.status = RUNNING
        self._sink = sink
        self._item_type = item
        self._keys = keys
        self._state = "open"
        self._in_array = False
        self._item: JsonCallObject | None = None

    def step(self, buf: str, pos: int) -> int:
        n = len(buf)
        while self.status == RUNNING:
            if self._state == "item":
                item = self._item
                assert item is not None, "the item state has an item"
                pos = item.step(buf, pos)
                if item.status == RUNNING:
                    return pos
                if item.status == FAILED or not self._in_array:
                    self.status = item.status
                    return pos
                self._state = "next"
                continue
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == n:
                return pos
            pos = self._step_punctuation(buf[pos], pos)
        return pos

    def finish(self) -> None:
        if self._item is not None and self._item.status == RUNNING:
            self._item.finish()
        self.status = DONE

    def _step_punctuation(self, char: str, pos: int) -> int:
        state = self._state
        if char == "{" and (state == "open" or state == "item_start"):
            self._item = self._item_type(self._sink, **self._keys)
            self._state = "item"
            return pos
        if state == "open" and char == "[":
            self._in_array = True
            self._state = "item_start"
        elif state == "next" and char == ",":
            self._state = "item_start"
        elif state in ("item_start", "next") and char == "]" and self._in_array:
            self.status = DONE
        else:
            self.status = FAILED
            return pos
        return pos + 1
