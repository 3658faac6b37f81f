"""Formats by parser name: SGLang's names and aliases, as the built-in
format tables register them (`parsers.formats`)."""

from __future__ import annotations

from parsers.formats import REASONING_FORMATS, TOOL_FORMATS
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat


def tool_format(name: str) -> ToolFormat:
    try:
        return TOOL_FORMATS[name]
    except KeyError:
        raise KeyError(_unknown("tool-call", name, tool_call_parser_names())) from None


def reasoning_format(name: str) -> ReasoningFormat:
    try:
        return REASONING_FORMATS[name]
    except KeyError:
        raise KeyError(_unknown("reasoning", name, reasoning_parser_names())) from None


def tool_call_parser_names() -> list[str]:
    return sorted(TOOL_FORMATS)


def reasoning_parser_names() -> list[str]:
    return sorted(REASONING_FORMATS)


def _unknown(kind: str, name: str, allowed: list[str]) -> str:
    return f"unknown {kind} parser {name!r}; allowed: {', '.join(allowed)}"
