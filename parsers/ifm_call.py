"""Body grammar: K2 Horizon's IFM tool calls, each block read whole.

A block names the function and gives its arguments as tags (an
`<ifm|arg_type>` before a value is optional) or as JSON
(`{"name", "arguments"|"parameters"}`, `{"function": {…}}`, or an array)::

    <ifm|tool_call>get_weather
    <ifm|arg_key>city</ifm|arg_key>
    <ifm|arg_type>string</ifm|arg_type>
    <ifm|arg_value>Paris</ifm|arg_value>
    </ifm|tool_call>
    <ifm|tool_call>{"name": "search", "arguments": {"query": "x"}}</ifm|tool_call>

The template wraps a turn's calls in `<ifm|tool_calls>` … `</ifm|tool_calls>`.
The body starts at `<ifm|tool_call`, which begins both: after `>` it reads
one block, after `s>` a whole group, and only then reports its calls
(atomic, as SGLang streams them). A block that is no call, or a group
holding one, fails, so its text is returned as content as written. A
group cut off before its closer keeps the calls of its complete blocks.

A tag value is typed by the tool schema when the schema names one type,
else by its `<ifm|arg_type>` (which states the type a union's value took),
else by the schema's union; with neither, it is JSON when it parses as
JSON, else text. JSON arguments are read as written.
"""

from __future__ import annotations

import json
import re

import orjson

from parsers import coerce
from parsers.json_call import DONE, FAILED, RUNNING
from parsers.markers import marker_set

BLOCK_CLOSE, GROUP_CLOSE = "</ifm|tool_call>", "</ifm|tool_calls>"
_BLOCK = re.compile(r"\s*<ifm\|tool_call>(.*?)</ifm\|tool_call>", re.DOTALL)
_KEY_OPEN = "<ifm|arg_key>"
_ARGUMENT = re.compile(
    r"<ifm\|arg_key>(?P<key>.*?)</ifm\|arg_key>\s*"
    r"(?:<ifm\|arg_type>(?P<type>.*?)</ifm\|arg_type>\s*)?"
    r"<ifm\|arg_value>(?P<value>.*?)</ifm\|arg_value>\s*",
    re.DOTALL,
)
_NAME = re.compile(r"[^\s<>]+")

Call = tuple[str, str]  # function name, arguments JSON text


class IfmCalls:
    """Reads one `<ifm|tool_call>` block or one `<ifm|tool_calls>` group."""

    def __init__(self, sink):
        self.status = RUNNING
        self._sink = sink
        self._group = False
        self._closer = None
        self._text: list[str] = []

    def step(self, buf: str, pos: int) -> int:
        if self._closer is None:
            pos = self._read_kind(buf, pos)
            if self._closer is None:
                return pos
        hit = self._closer.search(buf, pos)
        end = hit.start if hit else self._closer.safe_end(buf, pos)
        self._text.append(buf[pos:end])
        if hit is None:
            return end
        text = "".join(self._text)
        self._report(_group_calls(text, self._sink) if self._group else _block_calls(text, self._sink))
        return hit.end

    def finish(self) -> None:
        """The text ended before the closer: a group keeps its complete calls."""
        if self.status != RUNNING:
            return
        pieces = _pieces("".join(self._text), self._sink) if self._group else []
        if not any(isinstance(piece, tuple) for piece in pieces):
            self.status = FAILED
            return
        for piece in pieces:
            if isinstance(piece, tuple):
                self._report([piece])
            elif piece.strip():
                self._sink.stray(piece)

    def _read_kind(self, buf: str, pos: int) -> int:
        """After `<ifm|tool_call`: `>` opens a block, `s>` a group."""
        for rest, closer in ((">", BLOCK_CLOSE), ("s>", GROUP_CLOSE)):
            if buf.startswith(rest, pos):
                self._group = closer == GROUP_CLOSE
                self._closer = marker_set(closer)
                return pos + len(rest)
        if not (len(buf) - pos < 2 and "s>".startswith(buf[pos:])):
            self.status = FAILED
        return pos

    def _report(self, calls: list[Call] | None) -> None:
        if calls is None:
            self.status = FAILED
            return
        for name, arguments in calls:
            self._sink.start(name)
            self._sink.args(arguments)
            self._sink.end()
        self.status = DONE


def _group_calls(text: str, sink) -> list[Call] | None:
    """Every call of a group, or None if anything in it is not a call."""
    calls: list[Call] = []
    pos = 0
    for match in _BLOCK.finditer(text):
        block = _block_calls(match.group(1), sink) if match.start() == pos else None
        if block is None:
            return None
        calls += block
        pos = match.end()
    return calls if calls and not text[pos:].strip() else None


def _pieces(text: str, sink) -> list[Call | str]:
    """An unclosed group, block by block: calls, and text where none parsed."""
    pieces: list[Call | str] = []
    pos = 0
    for match in _BLOCK.finditer(text):
        calls = _block_calls(match.group(1), sink)
        pieces.append(text[pos : match.start()] if calls else text[pos : match.end()])
        pieces += calls or []
        pos = match.end()
    pieces.append(text[pos:])
    return pieces


def _block_calls(body: str, sink) -> list[Call] | None:
    stripped = body.strip()
    if stripped.startswith(("{", "[")):
        return _json_calls(stripped)
    call = _tag_call(body, sink)
    return [call] if call else None


def _json_calls(text: str) -> list[Call] | None:
    payload = _loads(text)
    calls: list[Call] = []
    for item in payload if isinstance(payload, list) else [payload]:
        function = item.get("function", item) if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            return None
        arguments = function.get("arguments", function.get("parameters"))
        if isinstance(arguments, str):
            arguments = _loads(arguments) if arguments.strip() else {}
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return None
        calls.append((name, json.dumps(arguments, ensure_ascii=False)))
    return calls or None


def _tag_call(body: str, sink) -> Call | None:
    first_key = body.find(_KEY_OPEN)
    name = (body if first_key < 0 else body[:first_key]).strip()
    if not _NAME.fullmatch(name):
        return None
    schema_types = sink.parameter_types(name)
    arguments: dict[str, str] = {}
    pos = len(body) if first_key < 0 else first_key
    while pos < len(body):
        match = _ARGUMENT.match(body, pos)
        key = match.group("key").strip() if match else ""
        if not key:
            return None
        arguments[key] = _typed(match.group("value"), schema_types.get(key, coerce.Types()), match.group("type"))
        pos = match.end()
    return name, "{" + ", ".join(orjson.dumps(key).decode() + ": " + value for key, value in arguments.items()) + "}"


def _typed(raw: str, schema: coerce.Types, wire_type: str | None) -> str:
    """JSON text for a tag value (see the module docstring)."""
    types = schema
    if wire_type and wire_type.strip() and len(schema - {"null"}) != 1:
        types = coerce.schema_types({"type": wire_type.strip()})
    if types:
        return coerce.to_json(raw, types)
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
