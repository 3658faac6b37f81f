"""parsegate's parsing library: reasoning and tool calls out of raw model text.

Standalone: synchronous, no I/O, no web imports. Typical use::

    from parsers import make_pipeline
    pipeline = make_pipeline("qwen3", "qwen25", tools=request_tools)
    for delta in model_text_deltas:
        events = pipeline.feed(delta)
    events = pipeline.finish()

Non-streaming is the same with one `feed(all_text)` and `finish()`.
"""

from parsers.core.call_body import CallOutcomes
from parsers.core.events import CallArgs, CallEnd, CallStart, Content, Event, Reasoning
from parsers.pipeline import ParseResult, Pipeline, make_pipeline, output_format, parse_text
from parsers.registry import (
    reasoning_format,
    reasoning_parser_aliases,
    reasoning_parser_name,
    reasoning_parser_names,
    tool_call_parser_aliases,
    tool_call_parser_name,
    tool_call_parser_names,
    tool_format,
)
from parsers.stages.output_format import OutputFormat

__all__ = [
    "CallArgs",
    "CallEnd",
    "CallOutcomes",
    "CallStart",
    "Content",
    "Event",
    "OutputFormat",
    "ParseResult",
    "Pipeline",
    "Reasoning",
    "make_pipeline",
    "output_format",
    "parse_text",
    "reasoning_format",
    "reasoning_parser_aliases",
    "reasoning_parser_name",
    "reasoning_parser_names",
    "tool_call_parser_aliases",
    "tool_call_parser_name",
    "tool_call_parser_names",
    "tool_format",
]
