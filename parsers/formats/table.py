"""The table the built-in formats register themselves in, by parser name
(SGLang's names and aliases). `parsers.registry` reads it."""

from __future__ import annotations

from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

TOOL_FORMATS: dict[str, ToolFormat] = {}
REASONING_FORMATS: dict[str, ReasoningFormat] = {}


def register(fmt: ToolFormat | ReasoningFormat, *aliases: str) -> None:
    """Make `fmt` available under its name and any aliases."""
    table = TOOL_FORMATS if isinstance(fmt, ToolFormat) else REASONING_FORMATS
    for name in (fmt.name, *aliases):
        if name in table:
            raise ValueError(f"parser name registered twice: {name}")
        table[name] = fmt
