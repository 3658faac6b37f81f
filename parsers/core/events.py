"""The small domain events a parser stage emits.

`gateway/` alone turns these into OpenAI deltas, ids, indices and
finish_reason; parsers never know about HTTP or JSON chunk shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final


@final
@dataclass(frozen=True, slots=True)
class Content:
    """Normal assistant text."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning ("thinking") text."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class CallStart:
    """A tool call begins; `index` is its 0-based ordinal in this turn."""

    index: int
    name: str


@final
@dataclass(frozen=True, slots=True)
class CallArgs:
    """A fragment of the call's JSON arguments text, verbatim from the model
    (or, for non-JSON formats, converted JSON text). Fragments of one call
    concatenate to its complete arguments JSON."""

    index: int
    text: str


@final
@dataclass(frozen=True, slots=True)
class CallEnd:
    """The call's arguments are complete."""

    index: int


Event = Content | Reasoning | CallStart | CallArgs | CallEnd
