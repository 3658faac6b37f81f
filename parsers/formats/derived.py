"""Formats built from markers read off a chat template (docs/derived-parsers.md).

`gateway.templates.analysis` renders a model's chat template and
reads where its reasoning and tool calls are written; what it finds is
data (`ReasoningMarkers`, `ToolMarkers`), turned here into the same
`ReasoningFormat` / `ToolFormat` the built-in tables hold, over the same
grammars: a JSON object naming the function inside call markers
(`JsonCalls`, the Hermes family), or the function name in the opening
marker and JSON arguments after a separator (`NamedJsonCall`, the
DeepSeek V3.1 family), or a JSON object with no marker at all, read as
the `llama3` format reads it (`UnmarkedJsonCalls`), under the template's
own key names. No other parsing code exists for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from parsers.core.tag_syntax import TagSyntax
from parsers.formats.tool_json import LLAMA3
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.named_call import NamedJsonCall
from parsers.grammars.tag_call import TagCall
from parsers.grammars.unmarked_json import UnmarkedJsonCalls
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat
from parsers.stages.tool_format import ParameterTags

NAME = "derived"
MODELS = "derived from a chat template"
JSON_OBJECT = "JSON object {name, arguments} inside call markers"
NAMED_JSON = "function name after the call marker, JSON arguments after a separator"
TAGGED = "function name after the call marker, keys and values in tags, typed by the tool's schema"
BARE_JSON = "bare JSON object {name, arguments} with no marker, as Llama 3's"
_ARGUMENT_KEYS = ("arguments", "parameters")
ARGUMENT_STYLES = (JSON_OBJECT, NAMED_JSON, TAGGED, BARE_JSON)


@dataclass(frozen=True)
class TagMarkers:
    """The tags of a call written as keys and values (TAGGED): what precedes
    the name inside its tag (`<function=`), ends it (`>`), and wraps each key
    and value; `value_trim` is what a value loses at its ends."""

    name_prefix: str
    name_end: str
    key_open: str
    key_close: str
    value_open: str
    value_close: str
    value_trim: str


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
    tags: TagMarkers | None = None  # TAGGED
    name_key: str = "name"  # JSON_OBJECT, BARE_JSON: the call object's keys
    args_key: str = "arguments"


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


def tool_format_from(
    markers: ToolMarkers, end_of_turn: tuple[str, ...], call_id_template: str | None = None
) -> ToolFormat:
    """The tool-call format the markers describe, making ids as `call_id_template` says."""
    section_start, section_end = markers.section_start or None, markers.section_end or None
    dropped: tuple[str, ...] = (markers.section_end,) if markers.section_end else ()
    body: Callable
    parameters = ""
    # the template's keys; `arguments` and `parameters` read each other, as in every JSON format
    usual = markers.args_key in _ARGUMENT_KEYS
    name_keys, args_keys = (markers.name_key,), _ARGUMENT_KEYS if usual else (markers.args_key,)
    written = f'{{"{markers.name_key}": "{{name}}", "{markers.args_key}": {{arguments}}}}'
    if markers.style == BARE_JSON:
        return replace(
            LLAMA3,
            name=NAME,
            models=MODELS,
            body=partial(UnmarkedJsonCalls, name_keys=name_keys, args_keys=args_keys),
            call_template=written,
            end_of_turn=end_of_turn,
            call_id_template=call_id_template,
        )
    if markers.style == JSON_OBJECT:
        body = partial(JsonCalls, name_keys=name_keys, args_keys=args_keys)
    elif markers.tags is not None:
        body, written, parameters = _tagged(markers, markers.tags)
    else:
        body = partial(
            NamedJsonCall,
            args_start=markers.args_start,
            name_pattern=r"\s*(?P<name>[^\s]+?)\s*",
            args_end=markers.call_end or None,
        )
        written = "{name}" + markers.args_start + "{arguments}"
        dropped += (markers.call_end, markers.args_start) if markers.call_end else (markers.args_start,)
    call_end = markers.call_end.split()[-1] if markers.tags is not None and markers.call_end else markers.call_end
    # a call's own name tag (`<function=`) opens it without the call marker too, as Qwen3-Coder's models write it
    unmarked = (markers.tags.name_prefix,) if markers.tags is not None and markers.tags.name_prefix else ()
    return ToolFormat(
        name=NAME,
        models=MODELS,
        section_start=section_start,
        section_end=section_end,
        call_start=markers.call_start,
        call_end=call_end,
        unmarked_starts=unmarked,
        body=body,
        call_template=markers.section_start + markers.call_start + written + markers.call_end + markers.section_end,
        render_arguments=ParameterTags(parameters) if parameters else None,
        dropped_markers=dropped,
        end_of_turn=end_of_turn,
        needs_special_tokens=True,
        call_id_template=call_id_template,
    )


def _tagged(markers: ToolMarkers, tags: TagMarkers) -> tuple[Callable, str, str]:
    """The tag grammar's syntax for TAGGED calls (as `tool_tags` declares
    Qwen3-Coder's and GLM's), how a call is written, and a parameter."""
    closes = tuple(marker for marker in markers.call_end.split() if marker)
    syntax = TagSyntax(
        name_ends=(tags.name_end,) if tags.name_end else (tags.key_open, *closes),
        name_pattern=r"\s*" + re.escape(tags.name_prefix) + r"(?P<name>[^\s<>]+?)\s*",
        key_open=tags.key_open,
        key_close=tags.key_close,
        value_open=tags.value_open,
        value_close=tags.value_close,
        value_also_ends_at=(tags.key_open,),
        call_closes=closes,
        closes_after_value=closes,  # inside a value they are text, as in the named tag formats
        trim=tags.value_trim,
    )
    newline = "\n" if tags.value_trim == "newline" else ""
    parameter = f"{tags.key_open}{{key}}{tags.key_close}{tags.value_open}{newline}{{value}}{newline}{tags.value_close}"
    return partial(TagCall, syntax=syntax), f"{tags.name_prefix}{{name}}{tags.name_end}{{arguments}}", parameter
