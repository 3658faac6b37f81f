"""Registries of formats by SGLang's parser names, aliases included."""

from __future__ import annotations

from parsers.reasoning import ReasoningFormat
from parsers.tool_calls import ToolFormat

_TOOL_FORMATS: dict[str, ToolFormat] = {}
_REASONING_FORMATS: dict[str, ReasoningFormat] = {}


def register(fmt: ToolFormat | ReasoningFormat, *aliases: str) -> None:
    """Make `fmt` available under its name and any aliases."""
    table = _TOOL_FORMATS if isinstance(fmt, ToolFormat) else _REASONING_FORMATS
    for name in (fmt.name, *aliases):
        if name in table:
            raise ValueError(f"parser name registered twice: {name}")
        table[name] = fmt


def tool_format(name: str) -> ToolFormat:
    _load_builtin_formats()
    try:
        return _TOOL_FORMATS[name]
    except KeyError:
        raise KeyError(_unknown("tool-call", name, tool_call_parser_names())) from None


def reasoning_format(name: str) -> ReasoningFormat:
    _load_builtin_formats()
    try:
        return _REASONING_FORMATS[name]
    except KeyError:
        raise KeyError(_unknown("reasoning", name, reasoning_parser_names())) from None


def tool_call_parser_names() -> list[str]:
    _load_builtin_formats()
    return sorted(_TOOL_FORMATS)


def reasoning_parser_names() -> list[str]:
    _load_builtin_formats()
    return sorted(_REASONING_FORMATS)


def _unknown(kind: str, name: str, allowed: list[str]) -> str:
    return f"unknown {kind} parser {name!r}; allowed: {', '.join(allowed)}"


def _load_builtin_formats() -> None:
    """Import the built-in format tables once; importing registers them."""
    import parsers.formats  # noqa: F401
