"""What a chat template's analysis found (analysis.py reads it from the
template's renders): per part, reasoning and tool calls, the parser
recognised, the markers a format is derived from, or the reasons it was
refused; the stages they make, and the report `parsegate parsers
--derive` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.templates.call_ids import NOT_WRITTEN
from parsers.formats import TOOL_FORMATS
from parsers.formats.derived import ReasoningMarkers, ToolMarkers, reasoning_format_from, tool_format_from
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat


@dataclass
class Derivation:
    """What a template's renders say about its reasoning and tool calls."""

    where: str
    reasoning: ReasoningMarkers | None = None
    tools: ToolMarkers | None = None
    end_of_turn: tuple[str, ...] = ()
    recognised_reasoning: str | None = None
    recognised_tools: str | None = None
    reasoning_from: str | None = None  # what recognised it: the family's markers, or the template's renders
    tools_from: str | None = None
    refusals: list[str] = field(default_factory=list)
    call_ids: str = NOT_WRITTEN  # how the template writes call ids (`call_ids.py`)
    call_id_template: str | None = None  # the ids a derived format makes
    milliseconds: float = 0.0

    @property
    def origin(self) -> str:
        """`template: recognised as X` or `template: derived` (GET /v1/models)."""
        names = [name for name in (self.recognised_tools, self.recognised_reasoning) if name]
        derived = isinstance(self.tool_stage(), ToolFormat) or isinstance(self.reasoning_stage(), ReasoningFormat)
        return (
            f"template: recognised as {'+'.join(dict.fromkeys(names))}"
            if names and not derived
            else "template: derived"
        )

    @property
    def found_nothing(self) -> bool:
        """Neither stage was recognised nor derived: plain content."""
        return self.tool_stage() is None and self.reasoning_stage() is None

    def tool_stage(self) -> str | ToolFormat | None:
        """The tool-call stage: a registered name, a derived format, or none."""
        if self.recognised_tools or self.tools is None:
            return self.recognised_tools
        return tool_format_from(self.tools, self.end_of_turn, self.call_id_template)

    def reasoning_stage(self) -> str | ReasoningFormat | None:
        """The reasoning stage: a registered name, a derived format, or none."""
        if self.recognised_reasoning or self.reasoning is None:
            return self.recognised_reasoning
        return reasoning_format_from(self.reasoning, _opening(self.tool_stage()), self.end_of_turn)

    def _ids_made(self) -> str | None:
        """The call ids the tool-call stage makes (a recognised format: its own)."""
        stage = self.tool_stage()
        return (TOOL_FORMATS[stage] if isinstance(stage, str) else stage).call_id_template if stage else None

    def parts(self) -> dict[str, dict[str, Any]]:
        """Per part (`tool_calls`, `reasoning`): `recognised` (as which
        parser, and from what), `derived` (with its markers) or `refused`
        (with the reasons), as `parsegate parsers --derive` says."""
        general = [reason for reason in self.refusals if _part_of(reason) is None]
        parts: dict[str, dict[str, Any]] = {}
        for part, name, origin, markers, stage in (
            ("tool_calls", self.recognised_tools, self.tools_from, self.tools, self.tool_stage()),
            ("reasoning", self.recognised_reasoning, self.reasoning_from, self.reasoning, self.reasoning_stage()),
        ):
            if name:
                parts[part] = {"status": "recognised", "parser": name, "from": origin}
            elif stage is not None and markers is not None:
                parts[part] = {"status": "derived", "markers": asdict(markers)}
            else:
                reasons = [reason for reason in self.refusals if _part_of(reason) == part]
                parts[part] = {"status": "refused", "reasons": reasons or general}
        return parts

    def to_json(self) -> dict[str, Any]:
        """What `parsegate parsers --derive --json` prints."""
        return {
            "template": self.where,
            "origin": None if self.found_nothing else self.origin,
            "reasoning": None if self.reasoning is None else asdict(self.reasoning),
            "tool_calls": None if self.tools is None else asdict(self.tools),
            "end_of_turn": list(self.end_of_turn),
            "call_ids": self.call_ids,
            "call_id_template": self._ids_made(),
            "recognised": {"tool_call_parser": self.recognised_tools, "reasoning_parser": self.recognised_reasoning},
            "recognised_from": {"tool_call_parser": self.tools_from, "reasoning_parser": self.reasoning_from},
            "refused": self.refusals,
            "parts": self.parts(),
            "milliseconds": round(self.milliseconds, 1),
        }


NO_CALLS = "the template writes no tool calls in an assistant turn"


def _part_of(reason: str) -> str | None:
    """The part a refusal is about (`tool_calls`, `reasoning`), or None for the whole template."""
    if reason.startswith("tool calls:") or reason == NO_CALLS:
        return "tool_calls"
    return "reasoning" if reason.startswith("reasoning:") else None


def _opening(stage: str | ToolFormat | None) -> str | None:
    if stage is None:
        return None
    fmt = TOOL_FORMATS[stage] if isinstance(stage, str) else stage
    return fmt.opening_markers[0] or None
