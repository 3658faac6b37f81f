"""The table the built-in formats register themselves in, by parser name
(SGLang's names and aliases, and the peers'). `parsers.registry` reads it."""

from __future__ import annotations

from typing import TypeVar

from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

TOOL_FORMATS: dict[str, ToolFormat] = {}
REASONING_FORMATS: dict[str, ReasoningFormat] = {}
_Format = TypeVar("_Format", ToolFormat, ReasoningFormat)


def spelling_key(name: str) -> str:
    """What two spellings of one name share: `-` and `_` are the same."""
    return name.replace("-", "_")


def register(fmt: ToolFormat | ReasoningFormat, *aliases: str) -> None:
    """Make `fmt` available under its name and any aliases."""
    if isinstance(fmt, ToolFormat):
        _add(TOOL_FORMATS, fmt, (fmt.name, *aliases))
    else:
        _add(REASONING_FORMATS, fmt, (fmt.name, *aliases))


def alias(kind: type[ToolFormat] | type[ReasoningFormat], target: str, *aliases: str) -> None:
    """Make the format registered as `target` available under `aliases` too
    (another project's name for it); `target` must be registered already."""
    table: dict = TOOL_FORMATS if kind is ToolFormat else REASONING_FORMATS
    _add(table, table[target], aliases)


def _add(table: dict[str, _Format], fmt: _Format, names: tuple[str, ...]) -> None:
    taken = {spelling_key(name): name for name in table}
    for name in names:
        if spelling_key(name) in taken:
            raise ValueError(f"parser name registered twice: {name} (as {taken[spelling_key(name)]})")
        table[name] = fmt
        taken[spelling_key(name)] = name
