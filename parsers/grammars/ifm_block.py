"""One block of K2 Horizon's IFM tool calls (see `parsers.grammars.ifm_call`): the
function's name, then its arguments as tags or as JSON.

A tag call is named when its first value opens (or when the block closes
after the name, for a call without arguments); each value then streams.
A JSON block is read by `JsonCalls`, named as soon as its `name` is read,
its arguments streaming as written. A block that is malformed before it
names a call is content as written, closer included. Once named, a call
is never retracted: the rest of a block that turns out malformed is
content, and a call the output cuts off keeps what it streamed.

A tag value is typed by the tool schema when the schema names one type,
else by its `<ifm|arg_type>` (which states the type a union's value took),
else by the schema's union; with neither, it is JSON when it parses as
JSON, else text. A value typed as a plain string streams as it is
written; any other is typed when it closes.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

import orjson

from parsers.core import coerce
from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink
from parsers.core.json_scan import JsonValueScanner, scan_to_end_marker
from parsers.core.json_writer import json_string_body
from parsers.core.markers import cut_short, marker_set, only_closes_may_follow
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.wrapped_call import WrappedCallObject


class BlockCalls(CallSink, Protocol):
    """What a block reports its calls to (`IfmCalls`): a sink that also
    counts the calls it started, knows whether one is open, and types a
    function's parameters by the tool schema."""

    starts: int
    call_open: bool

    def parameter_types(self, name: str) -> dict: ...


BLOCK_OPEN, BLOCK_CLOSE, GROUP_CLOSE = "<ifm|tool_call>", "</ifm|tool_call>", "</ifm|tool_calls>"
KEY_OPEN, KEY_CLOSE = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE_OPEN, TYPE_CLOSE = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE_OPEN, VALUE_CLOSE = "<ifm|arg_value>", "</ifm|arg_value>"
_TAGS = marker_set(KEY_OPEN, KEY_CLOSE, TYPE_OPEN, TYPE_CLOSE, VALUE_OPEN, VALUE_CLOSE, BLOCK_CLOSE)
_BLOCK_CLOSE = marker_set(BLOCK_CLOSE)
# Inside a value the block's and the group's close are text, unless only
# they follow up to the end of the output (the value's close left out), as
# `closes_after_value` reads the tag formats (`parsers.core.tag_syntax`).
_CLOSES_AFTER_VALUE = (BLOCK_CLOSE, GROUP_CLOSE)
_VALUE_ENDS = marker_set(VALUE_CLOSE, *_CLOSES_AFTER_VALUE)
_WHITESPACE = always_matching(r"\s*")
_NAME = re.compile(r"[^\s<>]+")


class IfmBlock:
    """One block's body, up to and with `</ifm|tool_call>`. `text()` is what
    of it is content: all of it when it named no call (status FAILED), else
    the rest of a block that turned out malformed."""

    def __init__(self, calls: BlockCalls, opening: str):
        self.status = RUNNING
        self.held_chars = 0  # a typed value's text, held until the value closes
        self._calls = calls
        self._state = "head"
        self._named = False
        self._raw = [opening]  # the text since the call last committed to anything
        self._committed = False
        self._rest_is_content = False
        self._token: list[str] = []
        self._token_chars = 0
        self._name = ""
        self._types: dict = {}
        self._key = ""
        self._wire_type = ""
        self._wrote_key = False
        self._streaming = False
        self._value: list[str] = []
        self._json: JsonCalls | None = None
        self._json_scan = JsonValueScanner()  # where the JSON ends, and whether a closer is inside a string
        self._json_ahead = 0

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING and pos < len(buf):
            state = self._state
            tracked = state != "value" and not (state == "json" and self._named)
            starts = self._calls.starts
            new_pos = getattr(self, "_step_" + state)(buf, pos)
            if new_pos is None:
                return pos
            if tracked:
                self._raw.append(buf[pos:new_pos])
            if self._committed or self._calls.starts != starts:
                self._raw.clear()
                self._committed = False
            pos = new_pos
        return pos

    def finish(self) -> None:
        if not self._named:
            self.status = FAILED
            return
        if self._state == "json":
            assert self._json is not None, "the json state has a reader"
            self._json.finish()
        elif self._state == "value":
            self._end_value()
            self._calls.args("}")
        elif self._calls.call_open:
            self._calls.args("}" if self._wrote_key else "{}")
            self._rest_is_content = True
        self.status = DONE

    def text(self) -> str:
        """What of the block is content (see the class docstring)."""
        if self._named and not self._rest_is_content:
            return ""
        text = "".join(self._raw)
        return text.removesuffix(BLOCK_CLOSE) if self._named else text

    def _step_head(self, buf: str, pos: int) -> int | None:
        blank_end = _WHITESPACE.match(buf, pos).end()
        if blank_end == len(buf):
            return blank_end if blank_end > pos else None
        if buf[blank_end] in "{[":
            self._json = JsonCalls(self._calls, item=WrappedCallObject)
            self._json_scan, self._json_ahead = JsonValueScanner(), 0
            self._state = "json"
        else:
            self._state = "name"
        return blank_end

    def _step_name(self, buf: str, pos: int) -> int | None:
        return self._read_token(buf, pos, (KEY_OPEN, BLOCK_CLOSE), self._take_name)

    def _take_name(self, name: str, tag: str) -> bool:
        if not _NAME.fullmatch(name):
            return False
        self._name = name
        if tag == BLOCK_CLOSE:
            self._announce()
            self._calls.args("{}")
            self._calls.end()
            self.status = DONE
        else:
            self._state = "key"
        return True

    def _step_key(self, buf: str, pos: int) -> int | None:
        return self._read_token(buf, pos, (KEY_CLOSE,), self._take_key)

    def _take_key(self, key: str, _tag: str) -> bool:
        self._key, self._wire_type = key, ""
        self._state = "after_key"
        return bool(key)

    def _step_type(self, buf: str, pos: int) -> int | None:
        return self._read_token(buf, pos, (TYPE_CLOSE,), self._take_type)

    def _take_type(self, wire_type: str, _tag: str) -> bool:
        self._wire_type = wire_type
        self._state = "after_type"
        return True

    def _read_token(self, buf: str, pos: int, closers: tuple[str, ...], take) -> int | None:
        """Text up to the next tag, which must be one of `closers`; `take`
        gets the text, stripped, and the tag, and says if they are good."""
        hit = _TAGS.search(buf, pos)
        end = hit.start if hit else _TAGS.safe_end(buf, pos)
        self._token.append(buf[pos:end])
        self._token_chars += end - pos
        if self._token_chars > MAX_TOKEN_CHARS:
            return self._malformed(end)
        if hit is None:
            return end if end > pos else None
        token = "".join(self._token).strip()
        self._token.clear()
        self._token_chars = 0
        if hit.marker not in closers or not take(token, hit.marker):
            return self._malformed(hit.start)
        return hit.end

    def _step_after_key(self, buf: str, pos: int) -> int | None:
        return self._expect(buf, pos, {TYPE_OPEN: self._open_type, VALUE_OPEN: self._open_value})

    def _step_after_type(self, buf: str, pos: int) -> int | None:
        return self._expect(buf, pos, {VALUE_OPEN: self._open_value})

    def _step_between(self, buf: str, pos: int) -> int | None:
        return self._expect(buf, pos, {KEY_OPEN: self._open_key, BLOCK_CLOSE: self._close})

    def _step_after_json(self, buf: str, pos: int) -> int | None:
        return self._expect(buf, pos, {BLOCK_CLOSE: self._end_json})

    def _expect(self, buf: str, pos: int, next_tags: dict) -> int | None:
        """Blanks, then one of `next_tags` (each with what it starts)."""
        blank_end = _WHITESPACE.match(buf, pos).end()
        for tag, then in next_tags.items():
            if buf.startswith(tag, blank_end):
                then()
                return blank_end + len(tag)
        if blank_end == len(buf) or any(cut_short(buf, blank_end, tag) for tag in next_tags):
            return blank_end if blank_end > pos else None
        return self._malformed(blank_end)

    def _open_type(self) -> None:
        self._state = "type"

    def _open_key(self) -> None:
        self._state = "key"

    def _open_value(self) -> None:
        if not self._named:
            self._announce()
        types = self._value_types()
        self._streaming = coerce.is_plain_string(types)
        separator = ", " if self._wrote_key else "{"
        self._wrote_key = True
        self._calls.args(separator + orjson.dumps(self._key).decode() + ": " + ('"' if self._streaming else ""))
        self._committed = True
        self._state = "value"

    def _announce(self) -> None:
        self._named = True
        self._calls.start(self._name)
        self._types = self._calls.parameter_types(self._name)

    def _value_types(self) -> coerce.Types:
        schema = self._types.get(self._key, coerce.Types())
        if self._wire_type and len(schema - {"null"}) != 1:
            return coerce.schema_types({"type": self._wire_type})
        return schema

    def _step_value(self, buf: str, pos: int) -> int | None:
        hit = _VALUE_ENDS.search(buf, pos)
        end = hit.start if hit else _VALUE_ENDS.safe_end(buf, pos)
        self._take_value(buf[pos:end])
        if hit is None:
            return end if end > pos else None
        if hit.marker in _CLOSES_AFTER_VALUE:
            if hit.start > pos:
                return hit.start
            if only_closes_may_follow(buf, pos, _CLOSES_AFTER_VALUE):
                return None  # held: text of the value, or the block's close at the end of the output
            self._take_value(hit.marker)
            return hit.end
        self._end_value()
        self._state = "between"
        return hit.end

    def _take_value(self, text: str) -> None:
        if text and self._streaming:
            self._calls.args(json_string_body(text))
        elif text:
            self._value.append(text)
            self.held_chars += len(text)

    def _end_value(self) -> None:
        if self._streaming:
            self._calls.args('"')
            return
        raw = "".join(self._value)
        self._value.clear()
        self.held_chars = 0
        types = self._value_types()
        self._calls.args(coerce.to_json(raw, types) if types else _json_or_text(raw))

    def _close(self) -> None:
        self._calls.args("}")
        self._calls.end()
        self.status = DONE

    def _step_json(self, buf: str, pos: int) -> int | None:
        """JSON calls, bounded by the block's closer outside their strings
        (inside one it is text, `scan_to_end_marker`). The scanner runs
        ahead of the reader by what the reader holds back."""
        scan_end, hit = scan_to_end_marker(self._json_scan, _BLOCK_CLOSE, buf, pos + self._json_ahead)
        bound = hit.start if hit else scan_end
        reader, starts = self._json, self._calls.starts
        assert reader is not None, "the json state has a reader"
        end = reader.step(buf if bound == len(buf) else buf[:bound], pos)
        self._json_ahead = bound - end
        self._named = self._named or self._calls.starts != starts
        if reader.status == FAILED:
            return self._malformed(end)
        if reader.status == DONE:
            self._state = "after_json"
            return end
        if hit is None:
            return end if end > pos else None
        if not self._named:
            return self._malformed(end)
        reader.finish()  # the block closed inside the JSON: the call keeps what it streamed
        self._end_json()
        return hit.end

    def _end_json(self) -> None:
        if self._calls.call_open:
            self._calls.end()
        self.status = DONE if self._named else FAILED

    def _malformed(self, pos: int) -> int:
        """The block is not what it began as: skip to its closer; a call it
        named ends with what it wrote, and the rest is content (for JSON,
        from where it went wrong)."""
        if self._named and self._state == "json":
            self._raw.clear()
        if self._named and self._calls.call_open:
            if self._state != "json":
                self._calls.args("}")
            self._calls.end()
        self._rest_is_content = self._named
        self._state = "skip"
        return pos

    def _step_skip(self, buf: str, pos: int) -> int | None:
        hit = _BLOCK_CLOSE.search(buf, pos)
        if hit is None:
            end = _BLOCK_CLOSE.safe_end(buf, pos)
            return end if end > pos else None
        self.status = DONE if self._named else FAILED
        return hit.end


def _json_or_text(raw: str) -> str:
    """An untyped value: its JSON when it is JSON, else its text as a string."""
    value = _loads(raw.strip())
    return orjson.dumps(raw).decode() if value is _NOT_JSON else json.dumps(value, ensure_ascii=False)


_NOT_JSON = object()


def _loads(text: str):
    """The JSON value `text` holds, else `_NOT_JSON`; NaN and numbers too
    large for a float are refused, so the value always writes back as JSON."""
    try:
        return json.loads(text, parse_constant=_refuse, parse_float=_finite)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _refuse(constant: str):
    raise ValueError(constant)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value
