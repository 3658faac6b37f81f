"""Formats by parser name: SGLang's names and aliases, and the peers'
(vLLM, llama.cpp), as the built-in format tables register them
(`parsers.formats`).

A name is accepted in either spelling, `-` or `_` (`granite-20b-fc` and
`granite_20b_fc`, `command_r7b` and `command-r7b`): lookups map it to the
spelling it was registered under, which is the one listed. An alias (a
name another project gives a format registered here, `openai` for
`gpt-oss`) is a name like any other; `*_parser_aliases()` say which
registered name each stands for.
"""

from __future__ import annotations

from parsers.formats import REASONING_FORMATS, TOOL_FORMATS
from parsers.formats.table import spelling_key
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat


def tool_format(name: str | ToolFormat) -> ToolFormat:
    """The format registered as `name`; a format given as data is itself."""
    if isinstance(name, ToolFormat):
        return name
    try:
        return TOOL_FORMATS[tool_call_parser_name(name)]
    except KeyError:
        raise KeyError(_unknown("tool-call", name, tool_call_parser_names())) from None


def reasoning_format(name: str | ReasoningFormat) -> ReasoningFormat:
    """The format registered as `name`; a format given as data is itself."""
    if isinstance(name, ReasoningFormat):
        return name
    try:
        return REASONING_FORMATS[reasoning_parser_name(name)]
    except KeyError:
        raise KeyError(_unknown("reasoning", name, reasoning_parser_names())) from None


def tool_call_parser_name(name: str) -> str:
    """The registered spelling of a tool-call parser name (`name` itself if unknown)."""
    return _registered_spelling(name, TOOL_FORMATS)


def reasoning_parser_name(name: str) -> str:
    """The registered spelling of a reasoning parser name (`name` itself if unknown)."""
    return _registered_spelling(name, REASONING_FORMATS)


def tool_call_parser_names() -> list[str]:
    return sorted(TOOL_FORMATS)


def reasoning_parser_names() -> list[str]:
    return sorted(REASONING_FORMATS)


def tool_call_parser_aliases() -> dict[str, str]:
    """Each alias among the tool-call parser names, and the name it stands for."""
    return _aliases(TOOL_FORMATS)


def reasoning_parser_aliases() -> dict[str, str]:
    """Each alias among the reasoning parser names, and the name it stands for."""
    return _aliases(REASONING_FORMATS)


def _aliases(table: dict) -> dict[str, str]:
    return {name: table[name].name for name in sorted(table) if table[name].name != name}


def _registered_spelling(name: str, table: dict) -> str:
    if name in table:
        return name
    key = spelling_key(name)
    return next((known for known in table if spelling_key(known) == key), name)


def _unknown(kind: str, name: str, allowed: list[str]) -> str:
    return f"unknown {kind} parser {name!r}; allowed: {', '.join(allowed)}"
