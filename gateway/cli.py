"""The `parsegate` command (also `python -m gateway`); docs/operations.md.

parsegate --version
parsegate serve   [--config PATH] [--host HOST] [--port PORT] [--workers N] [--log-format text|json]
parsegate parsers [--json] [--for MODEL | --derive SOURCE]
parsegate parse   [--tool-call-parser NAME] [--reasoning-parser NAME]
                  [--tools FILE.json] [--stream-chunk N] [FILE|-]
parsegate health  [--config PATH] [--host HOST] [--port PORT] [--timeout SECONDS]
parsegate render  (--tokenizer-config PATH | --template FILE | --gguf FILE | --config PATH --model NAME)
                  [--bos-token S] [--eos-token S]  < request.json

The arguments are read here; each command group runs in a module of its
own: serve and health in cli_serve.py, parsers in cli_parsers.py, parse
in cli_parse.py; render here, over render.py.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version

from gateway.cli_parse import parse_command
from gateway.cli_parsers import parsers_command
from gateway.cli_serve import DEFAULT_CONFIG, health_command, serve_command
from gateway.ops.env_overlay import CONFIG_FILE_VARIABLE


def _render(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the prompt a chat request renders to, byte for byte."""
    from gateway.render import RenderError, render_request

    sources = [args.tokenizer_config, args.template, args.gguf, args.config]
    if sum(source is not None for source in sources) != 1:
        parser.error("give one of --tokenizer-config, --template, --gguf or --config (with --model)")
    if (args.config is None) != (args.model is None):
        parser.error("--config and --model go together")
    try:
        prompt = render_request(
            sys.stdin.buffer.read(),
            path=args.tokenizer_config or args.template or args.gguf,
            bos_token=args.bos_token,
            eos_token=args.eos_token,
            config=args.config,
            model=args.model,
        )
    except RenderError as error:
        print(f"parsegate render: {error}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(prompt.encode("utf-8"))
    sys.stdout.flush()
    return 0


def _positive(text: str) -> int:
    number = int(text) if text.isdigit() else 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return number


def _version() -> str:
    try:
        return version("parsegate")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _arguments() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="parsegate",
        description="OpenAI- and Anthropic-compatible gateway that parses reasoning and tool calls "
        "out of raw-text LLM servers (vLLM, SGLang, llama.cpp).",
    )
    parser.add_argument("--version", action="version", version=f"parsegate {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the gateway",
        description="Run the gateway. The config is --config, else $PARSEGATE_CONFIG, else ./config.yaml; "
        "with none of them (and no PARSEGATE_*__* variables) the built-in demo model is served.",
    )
    serve.add_argument(
        "--config", metavar="PATH", help=f"config file (default: ${CONFIG_FILE_VARIABLE}, else ./{DEFAULT_CONFIG})"
    )
    serve.add_argument("--host", help="listen address (default: server.host)")
    serve.add_argument("--port", type=int, help="listen port (default: server.port)")
    serve.add_argument("--workers", type=_positive, default=1, metavar="N", help="worker processes (default: 1)")
    serve.add_argument("--log-format", choices=("text", "json"), help="log lines (default: server.log_format)")
    listing = commands.add_parser(
        "parsers",
        help="list the parser names",
        description="List the tool-call and reasoning parser names, show which a model name picks, "
        "or what a chat template implies.",
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--for", dest="model", metavar="MODEL", help="the parsers picked for a backend model name (e.g. Qwen/Qwen3-8B)"
    )
    listing.add_argument(
        "--derive",
        metavar="SOURCE",
        help="the parsers a chat template implies (a .jinja, tokenizer_config.json or .gguf): markers, "
        "argument style, the registered format recognised, and what was refused",
    )
    parse = commands.add_parser(
        "parse",
        help="parse one raw model output and print JSON",
        description="Parse one raw model output as the gateway would, and print its reasoning_content, "
        "content and tool_calls as JSON.",
    )
    parse.add_argument(
        "--tool-call-parser", metavar="NAME", help="tool-call parser (`parsegate parsers`; default: none)"
    )
    parse.add_argument(
        "--reasoning-parser", metavar="NAME", help="reasoning parser (`parsegate parsers`; default: none)"
    )
    parse.add_argument(
        "--tools",
        metavar="FILE.json",
        help="a JSON file with the request's OpenAI tools array: parsers type argument values by its schemas, "
        "and formats that call without a marker call only its functions (default: no tools)",
    )
    parse.add_argument("--stream-chunk", type=int, metavar="N", help="feed the text N characters at a time")
    parse.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="raw text (default: stdin)")
    health = commands.add_parser(
        "health",
        help="check that the gateway answers GET /health (exit 0, else 1)",
        description="Call GET /health of the gateway `parsegate serve` runs with the same config "
        "(--config, else $PARSEGATE_CONFIG, else ./config.yaml, PARSEGATE_*__* variables applied) "
        "on loopback; exit 0 when it answers 200, else 1. The image's HEALTHCHECK runs it.",
    )
    health.add_argument(
        "--config", metavar="PATH", help=f"config file (default: ${CONFIG_FILE_VARIABLE}, else ./{DEFAULT_CONFIG})"
    )
    health.add_argument(
        "--host", help="the address serve was given (default: server.host; 0.0.0.0 is called on loopback)"
    )
    health.add_argument("--port", type=int, help="the port serve was given (default: server.port)")
    health.add_argument(
        "--timeout", type=float, default=2.0, metavar="SECONDS", help="how long to wait for the answer (default: 2)"
    )
    render = commands.add_parser(
        "render",
        help="print the prompt a chat request (JSON on stdin) renders to",
        description="Read an OpenAI chat completion request (JSON) on stdin and print, byte for byte, "
        "the prompt template mode sends for it. Give exactly one template source.",
    )
    render.add_argument("--tokenizer-config", metavar="PATH", help="a Hugging Face tokenizer_config.json")
    render.add_argument("--template", metavar="FILE", help="a Jinja chat template file")
    render.add_argument("--gguf", metavar="FILE", help="a GGUF model file (its metadata's template)")
    render.add_argument("--config", metavar="PATH", help="a parsegate config, with --model")
    render.add_argument("--model", metavar="NAME", help="the model entry of --config to render as")
    render.add_argument("--bos-token", metavar="S", help="the BOS text (replaces the source's)")
    render.add_argument("--eos-token", metavar="S", help="the EOS text (replaces the source's)")
    return parser, {"serve": serve, "parsers": listing, "parse": parse, "health": health, "render": render}


def main(argv: list[str] | None = None) -> int:
    parser, commands = _arguments()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve_command(args)
    if args.command == "parsers":
        return parsers_command(args)
    if args.command == "health":
        return health_command(args)
    if args.command == "render":
        return _render(args, commands["render"])
    return parse_command(args, commands["parse"])
