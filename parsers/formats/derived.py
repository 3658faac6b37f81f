"""Formats built from markers read off a chat template (docs/derived-parsers.md).

`gateway.backend.template_analysis` renders a model's chat template and
reads where its reasoning and tool calls are written; what it finds is
data (`ReasoningMarkers`, `ToolMarkers`), turned here into the same
`ReasoningFormat` / `ToolFormat` the built-in tables hold, over the same
grammars: a JSON object naming the function inside call markers
(`JsonCalls`, the Hermes family), or the function name in the opening
marker and JSON arguments after a separator (`NamedJsonCall`, the
DeepSeek V3.1 family). No other parsing code exists for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from parsers.grammars.json_call import JsonCalls
from parsers.grammars.named_call import NamedJsonCall
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

NAME = "derived"
MODELS = "derived from a chat template"
JSON_OBJECT = "JSON object {name, arguments} inside call markers"
NAMED_JSON = "function name after the call marker, JSON arguments after a separator"
ARGUMENT_STYLES = (JSON_OBJECT, NAMED_JSON)


@dataclass(frozen=True)
class ReasoningMarkers:
    """Where a template writes reasoning. `prompt_opens`: the generation
    prompt already holds `start`; `switches`: the template variables that
    turn thinking on or off, `on_by_default` what their absence means."""

    start: str
    end: str
    prompt_opens: bool = False
    switches: tuple[str, ...] = ()
    on_by_default: bool = True


@dataclass(frozen=True)
class ToolMarkers:
    """Where a template writes tool calls: one of `ARGUMENT_STYLES`, the
    call's markers, and those of a section around several calls."""

    style: str
    call_start: str
    call_end: str
    section_start: str = ""
    section_end: str = ""
    separator: str = ""
    args_start: str = ""  # NAMED_JSON: between the name and the arguments


def reasoning_format_from(markers: ReasoningMarkers, tool_start: str | None, end_of_turn: tuple[str, ...]):
    """The reasoning format the markers describe; tool calls opened before
    the end marker end the reasoning."""
    return ReasoningFormat(
        name=NAME,
        models=MODELS,
        start=markers.start,
        end=markers.end,
        tool_start=tool_start,
        always_thinking=markers.prompt_opens and not markers.switches,
        thinking_switches=markers.switches,
        thinking_by_default=markers.on_by_default,
        end_of_turn=end_of_turn,
        needs_special_tokens=True,
    )


def tool_format_from(markers: ToolMarkers, end_of_turn: tuple[str, ...]) -> ToolFormat:
    """The tool-call format the markers describe."""
    section_start, section_end = markers.section_start or None, markers.section_end or None
    dropped: tuple[str, ...] = (markers.section_end,) if markers.section_end else ()
    body: Callable
    if markers.style == JSON_OBJECT:
        body, written = JsonCalls, '{"name": "{name}", "arguments": {arguments}}'
    else:
        body = partial(
            NamedJsonCall,
            args_start=markers.args_start,
            name_pattern=r"\s*(?P<name>[^\s]+?)\s*",
            args_end=markers.call_end or None,
        )
        written = "{name}" + markers.args_start + "{arguments}"
        dropped += (markers.call_end, markers.args_start) if markers.call_end else (markers.args_start,)
    return ToolFormat(
        name=NAME,
        models=MODELS,
        section_start=section_start,
        section_end=section_end,
        call_start=markers.call_start,
        call_end=markers.call_end,
        body=body,
        call_template=markers.section_start + markers.call_start + written + markers.call_end + markers.section_end,
        dropped_markers=dropped,
        end_of_turn=end_of_turn,
        needs_special_tokens=True,
    )
