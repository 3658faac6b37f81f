"""Formats from a declarative response template: the `response_template`
of a Hugging Face tokenizer_config.json, which transformers (>= 5.13)
reads with `tokenizer.parse_response()`.

The template is compiled once into the formats the stages already run, so
it streams exactly at every chunk split and in linear time, with no code
per model. Its fields map as follows:

- `reasoning_content` (or `reasoning`, `thinking`): literal `open`/`close`
  markers (or patterns that are literals, `parsers.core.literal_pattern`),
  content `text` -> a reasoning format; the reply starts outside reasoning.
- `tool_calls`, `repeats: true`, content `json`, one literal close, and either
  - a literal open and the whole JSON object `{"name", "arguments"}` as the
    function (`transform: {"type": "function", "function": "{content}"}`),
    the Qwen / Hermes shape; or
  - an open pattern naming the function, literal `(?P<name>[CLASS]+)`
    literal, and the JSON arguments as the body (`transform: {"type":
    "function", "function": {"name": "{name}", "arguments": "{content}"}}`).
- `tool_calls` with content `xml-inline` (`<function=NAME><parameter=K>V`
  tags, transformers' Qwen 3.5 template): the tag-call grammar,
  `parsers.formats.response_template_tags`.
- `content`: the field without an open marker; its close markers (the end
  of turn tokens) are removed.
- markers are assumed to be special tokens: the backend is asked to keep
  them (`keep_special_tokens` in config.yaml overrides).
- `strip` (default true, as transformers has it) trims the reasoning and
  the content at both ends (`parsers.stages.edge_whitespace`).
- string arguments are cast to the tools' declared types, as transformers
  casts them (`parsers.stages.typed_arguments`).

Any other construct is refused with a `ResponseTemplateError` naming it:
regexes beyond literal markers, the `kv-lines` and `python-call-list`
bodies, `xml-inline` beyond its tag shape, the JSON dialect knobs (`unquoted_keys`,
`string_delims`, `allow_non_json`), `join`, `transform_each`, required
fields, and fields with no place in an OpenAI message.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from parsers.core.literal_pattern import LiteralPatternError, literal_markers, named_marker
from parsers.formats.response_template_tags import TagBodyError, xml_inline_format
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.named_call import NamedJsonCall
from parsers.stages.output_format import OutputFormat
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

NAME = "response_template"
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
_WHOLE_FUNCTION = {"type": "function", "function": "{content}"}
_NAMED_FUNCTION = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
_TOP_KEYS = {"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"}


class ResponseTemplateError(ValueError):
    """The template cannot be streamed; the message names the construct."""


@dataclass(frozen=True)
class TemplateFormats:
    """What a response template compiles to."""

    reasoning: ReasoningFormat | None
    tool_calls: ToolFormat | None
    end_of_turn: tuple[str, ...]
    strip_reasoning: bool
    strip_content: bool

    @property
    def output(self) -> OutputFormat:
        """What the template says of the pipeline around its stages: its
        content's end-of-turn markers removed, the ends trimmed as `strip`
        says, string arguments cast to the tools' declared types."""
        return OutputFormat(
            end_of_turn=self.end_of_turn,
            strip_reasoning=self.strip_reasoning,
            strip_content=self.strip_content,
            cast_arguments=self.tool_calls is not None,
        )

    def pipeline_options(self) -> dict:
        """The `make_pipeline` arguments that parse with this template."""
        return {"reasoning_parser": self.reasoning, "tool_call_parser": self.tool_calls, "output": self.output}


def compile_response_template(template: Any) -> TemplateFormats:
    """The formats a `response_template` mapping declares (module docstring)."""
    if not isinstance(template, dict):
        raise ResponseTemplateError("response_template must be a JSON object")
    if template.get("version", 1) != 1:
        raise ResponseTemplateError(f"unsupported response_template version {template['version']!r}")
    unknown = sorted(set(template) - _TOP_KEYS)
    if unknown:
        raise ResponseTemplateError(f"unknown response_template keys {unknown}")
    fields = template.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ResponseTemplateError("response_template.fields must be a non-empty object")
    reasoning = tool_calls = None
    end_of_turn: tuple[str, ...] = ()
    strip_reasoning = strip_content = False
    for name, field in fields.items():
        _check_common(name, field)
        if name in REASONING_FIELDS:
            reasoning, strip_reasoning = _reasoning(name, field), _strips(field)
        elif name == "tool_calls":
            tool_calls = _tool_calls(field)
        elif name == "content":
            end_of_turn, strip_content = _content(field), _strips(field)
        else:
            raise ResponseTemplateError(
                f"field {name!r} has no place in an OpenAI message (fields: content, tool_calls, "
                f"{', '.join(REASONING_FIELDS)})"
            )
    if tool_calls is not None:
        tool_calls = replace(tool_calls, end_of_turn=end_of_turn)
    if reasoning is not None:
        reasoning = replace(reasoning, end_of_turn=end_of_turn)
    return TemplateFormats(reasoning, tool_calls, end_of_turn, strip_reasoning, strip_content)


def _check_common(name: str, field: Any) -> None:
    if not isinstance(field, dict):
        raise ResponseTemplateError(f"field {name!r} must be an object")
    for key in ("join", "transform_each"):
        if field.get(key):
            raise ResponseTemplateError(f"field {name!r}: {key!r} is not supported")
    if field.get("optional", True) is not True:
        raise ResponseTemplateError(f"field {name!r}: 'optional: false' cannot be checked while streaming")
    if "open" in field and "open_pattern" in field or "close" in field and "close_pattern" in field:
        raise ResponseTemplateError(f"field {name!r}: give a marker or a pattern, not both")


def _reasoning(name: str, field: dict) -> ReasoningFormat:
    _text_content(name, field)
    if field.get("repeats") or "transform" in field:
        raise ResponseTemplateError(f"field {name!r}: 'repeats' and 'transform' are not supported for reasoning")
    starts = _markers(name, field, "open")
    ends = _markers(name, field, "close")
    if not starts or not ends:
        raise ResponseTemplateError(f"field {name!r}: reasoning needs an open and a close marker")
    return ReasoningFormat(
        name=NAME,
        models="a model's response_template",
        start=starts[0],
        other_starts=starts[1:],
        end=ends[0],
        other_ends=ends[1:],
        thinking_switches=(),
        thinking_by_default=False,
        needs_special_tokens=True,
    )


def _content(field: dict) -> tuple[str, ...]:
    _text_content("content", field)
    if "open" in field or "open_pattern" in field:
        raise ResponseTemplateError("field 'content': an open marker is not supported (content is the rest)")
    if field.get("repeats") or "transform" in field:
        raise ResponseTemplateError("field 'content': 'repeats' and 'transform' are not supported")
    return _markers("content", field, "close")


def _tool_calls(field: dict) -> ToolFormat:
    if field.get("content") == "xml-inline":
        return _xml_inline(field)
    if field.get("content") != "json":
        raise ResponseTemplateError(
            f"field 'tool_calls': content {field.get('content', 'text')!r} cannot be streamed; "
            "only 'json' and 'xml-inline' can"
        )
    knobs = sorted(key for key, value in (field.get("content_args") or {}).items() if value)
    if knobs:
        raise ResponseTemplateError(f"field 'tool_calls': the JSON content_args {knobs} cannot be streamed verbatim")
    if field.get("repeats") is not True:
        raise ResponseTemplateError("field 'tool_calls': needs 'repeats: true'")
    ends = _markers("tool_calls", field, "close")
    if len(ends) != 1:
        raise ResponseTemplateError("field 'tool_calls': needs exactly one close marker")
    transform = field.get("transform")
    named = "(?P<name>" in str(field.get("open_pattern", ""))
    if transform == _WHOLE_FUNCTION and not named:
        starts = _markers("tool_calls", field, "open")
        if not starts:
            raise ResponseTemplateError("field 'tool_calls': needs an open marker")
        return ToolFormat(
            name=NAME,
            models="a model's response_template",
            call_start=starts[0],
            other_call_starts=starts[1:],
            call_end=ends[0],
            body=JsonCalls,
            call_template=starts[0] + '{"name": "{name}", "arguments": {arguments}}' + ends[0],
            needs_special_tokens=True,
        )
    if transform == _NAMED_FUNCTION and named:
        marker = _named(field["open_pattern"])
        return ToolFormat(
            name=NAME,
            models="a model's response_template",
            call_start=marker.before,
            call_end=ends[0],
            body=partial(NamedJsonCall, args_start=marker.after, name_pattern=marker.name_pattern, args_end=ends[0]),
            call_template=marker.before + "{name}" + marker.after + "{arguments}" + ends[0],
            needs_special_tokens=True,
        )
    raise ResponseTemplateError(
        "field 'tool_calls': the transform must be "
        f"{_WHOLE_FUNCTION} (with a literal open marker) or {_NAMED_FUNCTION} (with an open_pattern naming the function)"
    )


def _xml_inline(field: dict) -> ToolFormat:
    if field.get("repeats") is not True:
        raise ResponseTemplateError("field 'tool_calls': needs 'repeats: true'")
    if field.get("transform") != _NAMED_FUNCTION:
        raise ResponseTemplateError(f"field 'tool_calls': the xml-inline transform must be {_NAMED_FUNCTION}")
    try:
        return xml_inline_format(field, NAME)
    except TagBodyError as error:
        raise ResponseTemplateError(f"field 'tool_calls': {error}") from None


def _text_content(name: str, field: dict) -> None:
    if field.get("content", "text") != "text":
        raise ResponseTemplateError(f"field {name!r}: content {field['content']!r} is not supported here; use 'text'")
    unknown = sorted(set(field.get("content_args") or {}) - {"strip"})
    if unknown:
        raise ResponseTemplateError(f"field {name!r}: content_args {unknown} are not supported")


def _strips(field: dict) -> bool:
    return (field.get("content_args") or {}).get("strip", True) is not False


def _markers(name: str, field: dict, which: str) -> tuple[str, ...]:
    """The literal markers of a field's `open` or `close` (or its pattern)."""
    if which in field:
        raw = field[which]
        markers = (raw,) if isinstance(raw, str) else tuple(raw) if isinstance(raw, list) else ()
        if not markers or not all(isinstance(marker, str) and marker for marker in markers):
            raise ResponseTemplateError(f"field {name!r}: {which!r} must be a string or a list of strings")
        return markers
    pattern = field.get(f"{which}_pattern")
    if pattern is None:
        return ()
    try:
        return literal_markers(pattern)
    except LiteralPatternError as error:
        raise ResponseTemplateError(f"field {name!r}: {which}_pattern {error}") from None


def _named(pattern: str):
    try:
        marker = named_marker(pattern)
    except LiteralPatternError as error:
        raise ResponseTemplateError(f"field 'tool_calls': open_pattern {error}") from None
    if not marker.after:
        raise ResponseTemplateError(
            f"field 'tool_calls': open_pattern {pattern!r} needs a literal marker after the function name"
        )
    return marker
