"""Reading markers off rendered tool calls (`analysis.py`).

A call's core is the JSON object naming the function, or the function name
through its JSON arguments. Around the cores of a two-call render, the
text before the first is the section start and the call start; between
the two, the call end, a separator and the call start again; after the
second, the call end and the section end. What the before and between
texts share at their ends is the call start, what the after and between
texts share at their starts is the call end (llama.cpp's
`common/chat-diff-analyzer.cpp` reads them the same way), each cut back to
a whole token.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from parsers.formats.derived import BARE_JSON, JSON_OBJECT, NAMED_JSON, TAGGED, TagMarkers, ToolMarkers

_TOKEN = r"(?:<[^<>\s]+>|\[[^\[\]\s]+\])"
_LEADING = re.compile(_TOKEN)
_TRAILING = re.compile(_TOKEN + r"$")
_DECODER = json.JSONDecoder()
_DEFAULT_KEYS = ("name", "arguments")
_PARTIAL_TAG = re.compile(r"<[^<>\s]*=$")  # `<function=`, `<parameter=`: a tag whose text goes on


def opening_token(text: str) -> str | None:
    """The special-token-like marker `text` starts with (`<…>`, `[…]`)."""
    match = _LEADING.match(text)
    return match.group() if match else None


def closing_token(text: str) -> str | None:
    """The special-token-like marker `text` ends with."""
    match = _TRAILING.search(text)
    return match.group() if match else None


def call_markers(
    one: str, first: tuple[str, dict], two: str | None, second: tuple[str, dict]
) -> tuple[ToolMarkers | None, str]:
    """The markers of the one-call render `one` (and the two-call render
    `two`, if the template writes two calls), or None and why not."""
    core = _core(one, *first)
    if isinstance(core, str):
        return None, core
    style, start, end, args_start, keys = core
    tags = _tags(one, first[0], first[1], one.find(first[0])) if style == TAGGED else None
    if style == NAMED_JSON and not args_start.strip():
        return None, "the function name and its JSON arguments are not separated by a marker"
    before, between, after = one[:start], None, one[end:]
    if two is not None:
        cores = _core(two, *first), _core(two, *second)
        if isinstance(cores[0], str) or isinstance(cores[1], str):
            return None, "the two-call render holds no two calls"
        before, between, after = two[: cores[0][1]], two[cores[0][2] : cores[1][1]], two[cores[1][2] :]
    call_start = before if between is None else _token_suffix(_common_suffix(before, between))
    room = None if between is None else len(between) - len(call_start)
    call_end = after if between is None else _token_prefix(common_prefix(after, between[:room]))
    separator = "" if between is None else between[len(call_end) : room]
    markers = ToolMarkers(
        style=style,
        call_start=call_start.strip(),
        call_end=call_end.strip(),
        section_start=before[: len(before) - len(call_start)].strip(),
        section_end=after[len(call_end) :].strip(),
        separator=separator.strip(),
        args_start=args_start.strip(),
        tags=tags if isinstance(tags, TagMarkers) else None,
        name_key=keys[0],
        args_key=keys[1],
    )
    if not markers.call_start and style == JSON_OBJECT:
        return _json_list(markers)
    return markers, ""


def _json_list(markers: ToolMarkers) -> tuple[ToolMarkers | None, str]:
    """Calls written as one JSON list after a marker (Mistral's
    `[TOOL_CALLS][{…}, {…}]`): the marker opens the calls, the JSON body
    reads the list. With nothing around them, the calls are bare JSON
    (the Llama 3 family)."""
    opener = markers.section_start
    if not opener and not markers.section_end:
        return replace(markers, style=BARE_JSON), ""
    if not (opener.endswith("[") and opener[:-1].strip() and markers.section_end.startswith("]")):
        return None, "calls are bare JSON with no marker before them; only a registered format serves them"
    return replace(markers, call_start=opener[:-1].strip(), section_start="", section_end="", separator=""), ""


def _core(text: str, name: str, args: dict) -> tuple[str, int, int, str, tuple[str, str]] | str:
    """(style, start, end, args_start, (name key, arguments key)) of the
    call to `name` in `text`, or why none. A JSON object holding the name
    and the arguments is the call, whatever its keys are called."""
    objects = list(_json_objects(text))
    for start, end, value in objects:
        keys = _call_keys(value, name, args)
        if keys is not None:
            return JSON_OBJECT, start, end, "", keys
    at = text.find(name)
    if at < 0:
        return f"the function name {name!r} is not written"
    for start, end, value in objects:
        if start > at and value == args:
            return NAMED_JSON, at, end, text[at + len(name) : start], _DEFAULT_KEYS
    tags = _tags(text, name, args, at)
    if isinstance(tags, TagMarkers):
        return TAGGED, at - len(tags.name_prefix), _tagged_end(text, args, at, tags), "", _DEFAULT_KEYS
    return tags


def _call_keys(value: object, name: str, args: dict) -> tuple[str, str] | None:
    """The keys of a JSON call object holding `name` and `args` (`name` and
    `parameters` in Llama 3's), or None if `value` is not one."""
    if not isinstance(value, dict):
        return None
    name_key = next((key for key, item in value.items() if item == name), None)
    args_key = next((key for key, item in value.items() if item == args and key != name_key), None)
    return (name_key, args_key) if name_key and args_key else None


def _written(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _tags(text: str, name: str, args: dict, at: int) -> TagMarkers | str:
    """The tags around the first key and value of a call written as
    tagged keys and values (`<arg_key>K</arg_key><arg_value>V</arg_value>`,
    `<parameter=K>V</parameter>`), or why they are not."""
    key, value = next(iter(args.items()))
    key_at = text.find(key, at + len(name))
    value_at = text.find(_written(value), key_at + len(key)) if key_at >= 0 else -1
    if value_at < 0:
        return "the call's arguments are not written as JSON nor as tagged keys and values"
    header, key_to_value = text[at + len(name) : key_at], text[key_at + len(key) : value_at]
    after_value = text[value_at + len(_written(value)) :]
    name_prefix = _PARTIAL_TAG.search(text[:at])
    open_tag = _PARTIAL_TAG.search(header)
    key_open = closing_token(header.rstrip()) or (open_tag.group() if open_tag else None)
    value_close = opening_token(after_value.lstrip())
    key_close = opening_token(key_to_value.lstrip()) or key_to_value.strip()[:1]
    if not key_open or not value_close or not key_close:
        return "arguments are written as tagged keys and values whose tags could not be read"
    value_open = key_to_value.strip()[len(key_close) :].strip()
    return TagMarkers(
        name_prefix=name_prefix.group() if name_prefix else "",
        name_end=_name_end(header[: header.rfind(key_open)]),
        key_open=key_open,
        key_close=key_close,
        value_open=value_open,
        value_close=value_close,
        value_trim="newline" if key_to_value.endswith("\n") or after_value.startswith("\n") else "none",
    )


def _name_end(text: str) -> str:
    """What ends a tagged call's name: a marker (`>`), a newline, or nothing."""
    return text.strip() or ("\n" if "\n" in text else "")


def _tagged_end(text: str, args: dict, at: int, tags: TagMarkers) -> int:
    """Where the last value's close tag ends."""
    end = at
    for key, value in args.items():
        end = text.find(_written(value), text.find(tags.key_open + key, end) + len(key)) + len(_written(value))
        end = text.find(tags.value_close, end) + len(tags.value_close)
    return end


def _json_objects(text: str):
    for match in re.finditer(r"\{", text):
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except ValueError:
            continue
        yield match.start(), end, value


def common_prefix(one: str, other: str) -> str:
    size = next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))
    return one[:size]


def _common_suffix(one: str, other: str) -> str:
    shared = common_prefix(one[::-1], other[::-1])
    return one[len(one) - len(shared) :]


def _token_suffix(text: str) -> str:
    """`text` from its first whole token on (`><tool>` -> `<tool>`)."""
    for at in range(len(text)):
        if text[at] in "<[" or text[at].isspace():
            return text[at:]
    return ""


def _token_prefix(text: str) -> str:
    """`text` up to its last whole token (`</tool><` -> `</tool>`)."""
    for at in range(len(text), 0, -1):
        if text[at - 1] in ">]" or text[at - 1].isspace():
            return text[:at]
    return ""
