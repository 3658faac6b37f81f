"""Tool-call arguments typed by the tools' schemas, as they stream.

A declarative format (transformers' `response_template`) casts each string
argument to its parameter's declared type (`parsers.core.declared_cast`):
`{"days": "7"}` is `{"days": 7}` when `days` is an integer. The arguments
still stream as the model's own text, except one value at a time: a
top-level string whose parameter declares a type a string can be cast to
(or a top-level list, where the type is not an array) is held until it
ends, then sent cast, or as written when nothing casts. Everything else
goes out as it arrives, so a 64 KB string argument still streams. Each
character is looked at once; structure is read with `JsonValueScanner`.
"""

from __future__ import annotations

import json
from typing import Any

from parsers.core.always_matching import always_matching
from parsers.core.declared_cast import CASTING_TYPES, Types, cast_string, declared_properties
from parsers.core.events import CallArgs, CallEnd, CallStart, Event
from parsers.core.json_scan import JsonValueScanner

_WHITESPACE = always_matching(r"\s*")
_ITEM_CASTING_TYPES = CASTING_TYPES - {"array"}
# state -> {punctuation: next state}; anything else ends the typing.
_PUNCTUATION = {
    "open": {"{": "first"},
    "first": {'"': "key", "}": "verbatim"},
    "member": {'"': "key"},
    "colon": {":": "value"},
    "next": {",": "member", "}": "verbatim"},
}


class TypedArguments:
    """Casts the arguments of the calls to functions in `tools`:
    `pass_(events) -> events`."""

    def __init__(self, tools: list[dict] | None):
        self._properties = declared_properties(tools)
        self._typers: dict[int, ArgumentTyper] = {}

    def pass_(self, events: list[Event]) -> list[Event]:
        if not self._properties:
            return events
        out: list[Event] = []
        for event in events:
            if type(event) is CallStart:
                types = self._properties.get(event.name)
                if types:
                    self._typers[event.index] = ArgumentTyper(types)
            elif type(event) is CallArgs and event.index in self._typers:
                text = self._typers[event.index].feed(event.text)
                if text:
                    out.append(CallArgs(event.index, text))
                continue
            elif type(event) is CallEnd and event.index in self._typers:
                text = self._typers.pop(event.index).finish()
                if text:
                    out.append(CallArgs(event.index, text))
            out.append(event)
        return out


class ArgumentTyper:
    """One call's arguments object: `feed(text) -> text`, `finish() -> text`."""

    def __init__(self, types: dict[str, Types]):
        self._types = types
        self._state = "open"
        self._scanner = JsonValueScanner()
        self._piece: list[str] = []  # the key being read, or the value held
        self._value_types: Types | None = None  # set while a value is held

    def feed(self, text: str) -> str:
        out: list[str] = []
        pos, end = 0, len(text)
        while pos < end:
            state = self._state
            if state == "verbatim":
                out.append(text[pos:])
                break
            if state in ("key", "value"):
                pos = self._scan(text, pos, out)
                continue
            blank_end = _WHITESPACE.match(text, pos).end()
            out.append(text[pos:blank_end])
            if blank_end == end:
                break
            pos = blank_end
            self._state = _PUNCTUATION[state].get(text[pos], "verbatim")
            if self._state == "key":
                self._scanner = JsonValueScanner()
            elif self._state != "verbatim":
                out.append(text[pos])
                pos += 1
        return "".join(out)

    def finish(self) -> str:
        """The arguments ended: a value still held goes out as written."""
        held, self._piece = "".join(self._piece) if self._value_types is not None else "", []
        self._value_types = None
        return held

    def _scan(self, text: str, pos: int, out: list[str]) -> int:
        scanner = self._scanner
        if self._state == "value" and not scanner.started:
            blank_end = _WHITESPACE.match(text, pos).end()
            out.append(text[pos:blank_end])
            if blank_end == len(text):
                return blank_end
            pos = blank_end
            self._value_types = self._held_types(text[pos])
        start = pos
        pos = scanner.scan(text, pos)
        piece = text[start:pos]
        held = self._state == "value" and self._value_types is not None
        if not held:
            out.append(piece)
        if held or self._state == "key":
            self._piece.append(piece)
        if scanner.done:
            self._end_token(out)
        return pos

    def _held_types(self, first: str) -> Types | None:
        """The types of the value starting with `first`, if it must be held."""
        key = _decoded("".join(self._piece))
        self._piece = []
        types = self._types.get(key) if isinstance(key, str) else None
        if not types:
            return None
        if first == '"' and CASTING_TYPES.intersection(types):
            return types
        if first == "[" and "array" not in types and _ITEM_CASTING_TYPES.intersection(types):
            return types
        return None

    def _end_token(self, out: list[str]) -> None:
        if self._state == "key":
            self._state = "colon"
        else:
            if self._value_types is not None:
                out.append(_typed("".join(self._piece), self._value_types))
                self._piece, self._value_types = [], None
            self._state = "next"
        self._scanner = JsonValueScanner()


def _typed(raw: str, types: Types) -> str:
    """A held value's JSON text, cast; as written when nothing casts."""
    value = _decoded(raw)
    if isinstance(value, str):
        cast = cast_string(value, types)
        changed = cast is not value
    elif isinstance(value, list):
        cast = [cast_string(item, types) if isinstance(item, str) else item for item in value]
        changed = any(new is not old for new, old in zip(cast, value, strict=True))
    else:
        return raw
    if not changed:
        return raw
    try:
        return json.dumps(cast, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return raw


def _decoded(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
