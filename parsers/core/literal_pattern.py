"""Regular expressions that are only literal markers in disguise.

Declarative formats (transformers' `response_template`) write a marker as
a regex: `\\s*<tool_call>`, `\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)`, or
`<\\|tool_call_begin\\|>(?P<name>[\\w.]+)<\\|tool_call_argument_begin\\|>`. The
marker machinery streams literal markers with a bounded hold-back; a regex
in general cannot be streamed that way. `literal_markers` reads the forms
that are literals (with optional `\\s*` at either end, which the stages'
whitespace handling covers), and `named_marker` the form with one
`(?P<name>[CLASS]+)` between two literals. `pattern_parts` reads a pattern
as a sequence of literals, `\\s*` runs and named groups (`[CLASS]+` or a
lazy `.*?`), for the tag bodies that are read with markers. Anything else
is refused with the construct named (`LiteralPatternError`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_WHITESPACE_RUN = r"\s*"
_METACHARACTERS = set(".^$*+?{}[]()|")
_NAME_GROUP = re.compile(r"\(\?P<name>(\[(?:\\.|[^\]\\])+\]|\\w)\+\??\)")
_ANY_GROUP = re.compile(r"\(\?P<(\w+)>((?:\[(?:\\.|[^\]\\])+\]|\\w)\+\??|\.\*\?)\)")
_LITERAL_RUN = re.compile(r"(?:\\[^\w]|[^\\.^$*+?{}\[\]()|])+")


class LiteralPatternError(ValueError):
    """The pattern is not a literal marker; the message names the construct."""


class NamedMarker(NamedTuple):
    """`before` NAME `after`, the name matching `name_pattern` (a regex with group `name`)."""

    before: str
    name_pattern: str
    after: str


def literal_markers(pattern: str) -> tuple[str, ...]:
    """The literal markers a pattern matches: one literal, or a `(?:a|b)`
    alternation of literals, with an optional `\\s*` before and after."""
    core = _strip_whitespace_runs(pattern)
    if core.startswith("(?:") and core.endswith(")"):
        inner = core[3:-1]
        return tuple(_literal(part, pattern) for part in _split_alternatives(inner, pattern))
    return (_literal(core, pattern),)


def named_marker(pattern: str) -> NamedMarker:
    """A marker naming the function: literal, `(?P<name>[CLASS]+)`, literal."""
    core = _strip_whitespace_runs(pattern)
    match = _NAME_GROUP.search(core)
    if match is None:
        raise LiteralPatternError(f"{pattern!r}: the group (?P<name>...) must be one character class repeated with +")
    before = _literal(core[: match.start()], pattern)
    after = _literal(core[match.end() :], pattern) if match.end() < len(core) else ""
    return NamedMarker(before, rf"(?P<name>{match.group(1)}+)", after)


class Group(NamedTuple):
    """A named group of `pattern_parts`: its name and its regex."""

    name: str
    regex: str


BLANKS = Group("", r"\s*")  # a `\s*` run in `pattern_parts`


def pattern_parts(pattern: str) -> tuple[str | Group, ...]:
    """The pattern as literals (str), `BLANKS` and `Group`s, in order."""
    parts: list[str | Group] = []
    position = 0
    while position < len(pattern):
        if pattern.startswith(_WHITESPACE_RUN, position):
            parts.append(BLANKS)
            position += len(_WHITESPACE_RUN)
        elif group := _ANY_GROUP.match(pattern, position):
            parts.append(Group(group.group(1), group.group()))
            position = group.end()
        elif run := _LITERAL_RUN.match(pattern, position):
            parts.append(_literal(run.group(), pattern))
            position = run.end()
        else:
            raise LiteralPatternError(
                f"{pattern!r}: {pattern[position:]!r} is more than literals, \\s* and named groups"
            )
    return tuple(parts)


def _strip_whitespace_runs(pattern: str) -> str:
    core = pattern.removeprefix(_WHITESPACE_RUN)
    if core.endswith(_WHITESPACE_RUN) and not core.endswith("\\" + _WHITESPACE_RUN):
        core = core[: -len(_WHITESPACE_RUN)]
    return core


def _split_alternatives(inner: str, pattern: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in inner:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _literal(text: str, pattern: str) -> str:
    """The text a regex fragment of plain and escaped characters matches."""
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == "\\":
            escaped = text[position + 1 : position + 2]
            if not escaped or escaped.isalnum():
                raise LiteralPatternError(f"{pattern!r}: the escape \\{escaped} is not a literal character")
            out.append(escaped)
            position += 2
            continue
        if char in _METACHARACTERS:
            raise LiteralPatternError(f"{pattern!r}: {char!r} makes it more than a literal marker")
        out.append(char)
        position += 1
    if not out:
        raise LiteralPatternError(f"{pattern!r}: matches no literal marker")
    return "".join(out)
