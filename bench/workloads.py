"""Model outputs for speed measurements, each in its format's own wire
format (via the formats' `render_call`), and the streamed CPU cost of one.

Shared by bench/parser_bench.py and the linearity guard in the tests.
Every text is laid out so that, fed in `chunk`-character pieces, the
markers around the call (or the reasoning) are cut by a chunk boundary.
"""

from __future__ import annotations

import gc
import time

import orjson

from parsers import make_pipeline, reasoning_format, reasoning_parser_names, tool_call_parser_names, tool_format
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

_LINE = ("lorem ipsum dolor sit amet " * 40)[:1022] + "\\n"  # 1 KB of JSON string text
_THOUGHT = ("thinking about it " * 57)[:1024]


def distinct_tool_parsers() -> list[str]:
    """One name per registered tool-call format (aliases share a format)."""
    return sorted({tool_format(name).name: name for name in tool_call_parser_names()}.values())


def distinct_reasoning_parsers() -> list[str]:
    """One name per registered reasoning format."""
    return sorted({reasoning_format(name).name: name for name in reasoning_parser_names()}.values())


def aliases(name: str, names: list[str], lookup) -> list[str]:
    """Every registered name that means the same format as `name`."""
    return [other for other in names if lookup(other) is lookup(name)]


def _split_offset(prefix_length: int, chunk: int) -> str:
    """Padding after which a marker starts on the last character of a chunk."""
    return " " * ((chunk - 1 - prefix_length) % chunk)


def long_argument_call(parser: str | ToolFormat, kilobytes: int, chunk: int = 4) -> str:
    """Prose, then one `write_file` call whose `content` string is `kilobytes` KB."""
    fmt = tool_format(parser)
    lead = "Saving it." + _split_offset(len("Saving it."), chunk)
    for pad in range(chunk):
        arguments = '{"path": "/tmp/out.txt", "content": "' + _LINE * kilobytes + "x" * pad + '"}'
        text = lead + fmt.render_call("write_file", arguments)
        end = text.rfind(fmt.call_end) if fmt.call_end else len(text)
        if end % chunk == chunk - 1:
            break
    return text


def many_parameters_call(parser: str, count: int, chunk: int = 4) -> str:
    """Prose, then one `configure` call with `count` small parameters, numbers and strings."""
    arguments = orjson.dumps({f"p{i}": (i if i % 2 else f"v{i}") for i in range(count)}).decode()
    lead = "Configuring." + _split_offset(len("Configuring."), chunk)
    return lead + tool_format(parser).render_call("configure", arguments)


def reasoning_output(parser: str | ReasoningFormat, kilobytes: int, chunk: int = 4) -> str:
    """Start marker, `kilobytes` KB of reasoning, end marker, a short answer."""
    fmt = reasoning_format(parser)
    body = fmt.start + _THOUGHT * kilobytes
    return body + _split_offset(len(body), chunk) + fmt.end + "Answer."


def tool_pipeline(parser: str | ToolFormat):
    return make_pipeline(None, parser)


def reasoning_pipeline(parser: str | ReasoningFormat, stream_reasoning: bool = True):
    return make_pipeline(parser, None, force_reasoning=False, stream_reasoning=stream_reasoning)


def streamed_cpu_seconds(pipeline, text: str, chunk: int = 4) -> tuple[float, int]:
    """CPU time of this process to feed `text` in `chunk`-character pieces
    and finish, and the number of pieces. The garbage collector is paused
    meanwhile: a full collection of a large heap (a test session's) would
    be charged to whichever run it happens in."""
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.process_time()
        for piece in pieces:
            pipeline.feed(piece)
        pipeline.finish()
        return time.process_time() - started, len(pieces)
    finally:
        if collecting:
            gc.enable()
