"""The `parsegate` command (also `python -m gateway`).

    parsegate serve   [--config PATH] [--host HOST] [--port PORT] [--workers N] [--no-access-log]
    parsegate parsers [--json]
    parsegate parse   [--tool-call-parser NAME] [--reasoning-parser NAME]
                      [--tools FILE.json] [--stream-chunk N] [FILE|-]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from parsers import parse_text, reasoning_parser_names, tool_call_parser_names

DEFAULT_CONFIG = "config.yaml"


def _serve(args: argparse.Namespace) -> int:
    from gateway.config import ConfigError, load_config

    path = args.config or os.environ.get("PARSEGATE_CONFIG") or DEFAULT_CONFIG
    try:
        config = load_config(path)
    except ConfigError as error:
        print(f"parsegate: {error}", file=sys.stderr)
        return 2
    from gateway.serve import serve  # the web stack loads only once there is something to serve

    host, port = args.host or config.server.host, args.port or config.server.port
    serve(config, path, host, port, args.workers, access_log=not args.no_access_log)
    return 0


def _list_parsers(args: argparse.Namespace) -> int:
    tools, reasoning = tool_call_parser_names(), reasoning_parser_names()
    if args.json:
        print(json.dumps({"tool_call_parsers": tools, "reasoning_parsers": reasoning}))
    else:
        print("tool-call parsers:", *tools, sep="\n  ")
        print("reasoning parsers:", *reasoning, sep="\n  ")
    return 0


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as file:
        return file.read()


def _parse(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    for flag, name, allowed in (
        ("--tool-call-parser", args.tool_call_parser, tool_call_parser_names()),
        ("--reasoning-parser", args.reasoning_parser, reasoning_parser_names()),
    ):
        if name is not None and name not in allowed:
            parser.error(f"{flag}: unknown parser {name!r}; allowed: {', '.join(allowed)}")
    if args.stream_chunk is not None and args.stream_chunk < 1:
        parser.error("--stream-chunk: must be at least 1")
    try:
        text = _read(args.file)
        tools = json.loads(_read(args.tools)) if args.tools else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        parser.error(str(error))
    if tools is not None and not isinstance(tools, list):
        parser.error("--tools: the file must hold a JSON array of OpenAI tools")
    result = parse_text(
        text, args.reasoning_parser, args.tool_call_parser, tools=tools, chunk_size=args.stream_chunk
    )
    print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    return 0


def _positive(text: str) -> int:
    number = int(text) if text.isdigit() else 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return number


def _arguments() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(prog="parsegate", description="OpenAI-compatible parsing gateway")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help=f"config file (default: $PARSEGATE_CONFIG, else ./{DEFAULT_CONFIG})")
    serve.add_argument("--host", help="listen address (default: server.host)")
    serve.add_argument("--port", type=int, help="listen port (default: server.port)")
    serve.add_argument("--workers", type=_positive, default=1, metavar="N", help="worker processes (default: 1)")
    serve.add_argument("--no-access-log", action="store_true", help="no log line per request")
    listing = commands.add_parser("parsers", help="list the parser names")
    listing.add_argument("--json", action="store_true", help="print JSON")
    parse = commands.add_parser("parse", help="parse one raw model output and print JSON")
    parse.add_argument("--tool-call-parser", metavar="NAME")
    parse.add_argument("--reasoning-parser", metavar="NAME")
    parse.add_argument("--tools", metavar="FILE.json", help="the request's OpenAI tools array")
    parse.add_argument("--stream-chunk", type=int, metavar="N", help="feed the text N characters at a time")
    parse.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="raw text (default: stdin)")
    return parser, {"serve": serve, "parsers": listing, "parse": parse}


def main(argv: list[str] | None = None) -> int:
    parser, commands = _arguments()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "parsers":
        return _list_parsers(args)
    return _parse(args, commands["parse"])
