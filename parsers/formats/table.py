"""The table the built-in formats register themselves in, by parser name
(SGLang's names and aliases). `parsers.registry` reads it."""

from __future__ import annotations

from typing import TypeVar

from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

TOOL_FORMATS: dict[str, ToolFormat] = {}
REASONING_FORMATS: dict[str, ReasoningFormat] = {}
_Format = TypeVar("_Format", ToolFormat, ReasoningFormat)


def register(fmt: ToolFormat | ReasoningFormat, *aliases: str) -> None:
    """Make `fmt` available under its name and any aliases."""
    if isinstance(fmt, ToolFormat):
        _add(TOOL_FORMATS, fmt, aliases)
    else:
        _add(REASONING_FORMATS, fmt, aliases)


def _add(table: dict[str, _Format], fmt: _Format, aliases: tuple[str, ...]) -> None:
    for name in (fmt.name, *aliases):
        if name in table:
            raise ValueError(f"parser name registered twice: {name}")
        table[name] = fmt
