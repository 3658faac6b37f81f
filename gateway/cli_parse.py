"""`parsegate parse`: one raw model output parsed as the gateway would,
printed as JSON; `--tools` read from a file of OpenAI tools.
"""

from __future__ import annotations

import argparse
import json
import sys

from gateway.ops.validation_errors import unknown_name
from parsers import (
    parse_text,
    reasoning_parser_name,
    reasoning_parser_names,
    tool_call_parser_name,
    tool_call_parser_names,
)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as file:
        return file.read()


def _reason(error: OSError | UnicodeDecodeError) -> str:
    """Why a file could not be read, without the path (the caller names it)."""
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 text (byte {error.start})"
    return error.strerror or str(error)


def _tools(path: str, parser: argparse.ArgumentParser) -> list:
    """The OpenAI tools array of `parse --tools PATH`; a usage error that
    names the flag, the file and what is wrong with it."""
    where = f"--tools {path}"
    try:
        tools = json.loads(_read(path))
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"{where}: cannot read the file: {_reason(error)}")
    except json.JSONDecodeError as error:
        parser.error(f"{where}: not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}")
    expected = "a JSON array of OpenAI tools"
    if not isinstance(tools, list):
        parser.error(f"{where}: the file must hold {expected}, not a JSON {_json_kind(tools)}")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            parser.error(f"{where}: item {index} is a JSON {_json_kind(tool)}; the file must hold {expected}")
    return tools


def _json_kind(value: object) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds[type(value)]


def parse_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    for flag, name, allowed in (
        (
            "--tool-call-parser",
            args.tool_call_parser and tool_call_parser_name(args.tool_call_parser),
            tool_call_parser_names(),
        ),
        (
            "--reasoning-parser",
            args.reasoning_parser and reasoning_parser_name(args.reasoning_parser),
            reasoning_parser_names(),
        ),
    ):
        if name is not None and name not in allowed:
            parser.error(f"{flag}: {unknown_name('parser', name, allowed)}")
    if args.stream_chunk is not None and args.stream_chunk < 1:
        parser.error("--stream-chunk: must be at least 1")
    try:
        text = _read(args.file)
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"{args.file}: cannot read the raw text: {_reason(error)}")
    tools = _tools(args.tools, parser) if args.tools else None
    result = parse_text(text, args.reasoning_parser, args.tool_call_parser, tools=tools, chunk_size=args.stream_chunk)
    print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    return 0
