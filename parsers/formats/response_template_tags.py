"""The `xml-inline` tool-call body of a response template, read with the
tag-call grammar (`parsers.grammars.tag_call`) that reads Qwen3-Coder.

transformers' Qwen 3.5 template writes it::

    "open_pattern": "\\s*<tool_call>\\s*<function=(?P<name>[^>\\n]+)>",
    "close_pattern": "</function>\\s*</tool_call>",
    "content": "xml-inline",
    "content_args": {"tag_pattern": "<parameter=(?P<key>[^>\\n]+)>\\s*(?P<value>.*?)\\s*</parameter>"},
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}

Each pattern is literals, `\\s*` runs and named groups
(`parsers.core.literal_pattern.pattern_parts`):

- open: the call's start marker, then a header naming the function (any
  literals, `\\s*` and the `name` group) up to a last literal;
- close: one literal, or two with an optional `\\s*` between (the inner
  one closes the function, the outer one the call);
- tag: a literal, the `key` group, a literal, the `value` group (`.*?`)
  with `\\s*` on both sides or neither, a literal.

Every value is a string, as transformers reads it, streamed as it is
written; the arguments are then cast to the tools' declared types like
any response template's (`parsers.stages.typed_arguments`).
"""

from __future__ import annotations

import re
from functools import partial

from parsers.core.literal_pattern import BLANKS, Group, LiteralPatternError, pattern_parts
from parsers.core.tag_syntax import TagSyntax
from parsers.grammars.tag_call import TagCall
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

_KNOWN_ARGS = {"tag_pattern"}


class TagBodyError(ValueError):
    """The xml-inline body cannot be read with the tag grammar (the message says why)."""


def xml_inline_format(field: dict, name: str) -> ToolFormat:
    """The tool-call format of an `xml-inline` `tool_calls` field."""
    args = field.get("content_args") or {}
    unknown = sorted(key for key, value in args.items() if key not in _KNOWN_ARGS and value)
    if unknown:
        raise TagBodyError(f"the xml-inline content_args {unknown} are not supported")
    call_start, header, name_end = _open(_parts(field, "open_pattern"))
    closes = _close(field)
    key_open, key_pattern, key_close, trim, value_close = _tag(args.get("tag_pattern"))
    syntax = TagSyntax(
        name_ends=(name_end,),
        name_pattern="".join(part.regex if isinstance(part, Group) else re.escape(part) for part in header),
        key_open=key_open,
        key_pattern=key_pattern,
        key_close=key_close,
        value_close=value_close,
        value_also_ends_at=(key_open, *closes),
        call_closes=closes,
        trim=trim,
        all_strings=True,
    )
    return ToolFormat(
        name=name,
        models="a model's response_template",
        call_start=call_start,
        call_end=closes[-1] if len(closes) > 1 else "",
        body=partial(TagCall, syntax=syntax),
        call_template=call_start + _written(header) + name_end + "{arguments}" + "".join(closes),
        render_arguments=ParameterTags(f"{key_open}{{key}}{key_close}{{value}}{value_close}"),
        needs_special_tokens=True,
    )


def _parts(field: dict, key: str) -> tuple[str | Group, ...]:
    pattern = field.get(key)
    if not isinstance(pattern, str):
        raise TagBodyError(f"needs an {key}")
    try:
        return pattern_parts(pattern)
    except LiteralPatternError as error:
        raise TagBodyError(f"{key} {error}") from None


def _open(parts: tuple[str | Group, ...]) -> tuple[str, tuple[str | Group, ...], str]:
    """The call's start marker, the header's parts and the header's end."""
    parts = parts[1:] if parts[:1] == (BLANKS,) else parts
    groups = [part.name for part in parts if isinstance(part, Group) and part is not BLANKS]
    if len(parts) < 3 or not isinstance(parts[0], str) or not isinstance(parts[-1], str) or groups != ["name"]:
        raise TagBodyError(
            "open_pattern must be a literal start marker, a header with the group (?P<name>...), and a literal"
        )
    return parts[0], parts[1:-1], parts[-1]


def _written(header: tuple[str | Group, ...]) -> str:
    """The header as a model writes it, the name a `{name}` placeholder."""
    return "".join(part if isinstance(part, str) else "{name}" if part.name else "" for part in header)


def _close(field: dict) -> tuple[str, ...]:
    if "close" in field:
        close = field["close"]
        if not isinstance(close, str) or not close:
            raise TagBodyError("needs one close marker")
        return (close,)
    parts = _parts(field, "close_pattern")
    literals = tuple(part for part in parts if isinstance(part, str))
    if len(literals) not in (1, 2) or not all(part is BLANKS or isinstance(part, str) for part in parts):
        raise TagBodyError("close_pattern must be one literal, or two with \\s* between")
    return literals


def _tag(pattern) -> tuple[str, str, str, str, str]:
    """Key open, key pattern, key close, the value's trim, value close."""
    if not isinstance(pattern, str):
        raise TagBodyError("the xml-inline content_args need a tag_pattern")
    try:
        parts = pattern_parts(pattern)
    except LiteralPatternError as error:
        raise TagBodyError(f"tag_pattern {error}") from None
    shapes = {
        (str, "key", str, "value", str): "none",
        (str, "key", str, "", "value", "", str): "strip",
    }
    shape = tuple(part.name if isinstance(part, Group) else str for part in parts)
    if shape not in shapes or parts[-3 if shapes.get(shape) == "strip" else -2] != Group("value", "(?P<value>.*?)"):
        raise TagBodyError(
            "tag_pattern must be a literal, (?P<key>[CLASS]+), a literal, (?P<value>.*?) "
            "(with \\s* on both sides or neither), and a literal"
        )
    key, value_close = parts[1], parts[-1]
    assert isinstance(key, Group) and isinstance(value_close, str), "the shape says so"
    return str(parts[0]), key.regex, str(parts[2]), shapes[shape], value_close
