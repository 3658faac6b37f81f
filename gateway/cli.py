"""The `parsegate` command (also `python -m gateway`); docs/operations.md.

parsegate --version
parsegate serve   [--config PATH] [--host HOST] [--port PORT] [--workers N] [--log-format text|json]
parsegate parsers [--json] [--for MODEL | --derive SOURCE]
parsegate parse   [--tool-call-parser NAME] [--reasoning-parser NAME]
                  [--tools FILE.json] [--stream-chunk N] [FILE|-]
parsegate health  [--config PATH] [--host HOST] [--port PORT] [--timeout SECONDS]
parsegate render  (--tokenizer-config PATH | --template FILE | --gguf FILE | --config PATH --model NAME)
                  [--bos-token S] [--eos-token S]  < request.json
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.config
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from gateway.ops.env_overlay import CONFIG_FILE_VARIABLE, config_variables
from gateway.ops.validation_errors import unknown_name
from parsers import (
    parse_text,
    reasoning_parser_aliases,
    reasoning_parser_name,
    reasoning_parser_names,
    tool_call_parser_aliases,
    tool_call_parser_name,
    tool_call_parser_names,
)

DEFAULT_CONFIG = "config.yaml"
DEMO_CONFIG = Path(__file__).parent / "ops" / "demo_config.yaml"  # served when no config is found
HOW_TO_CONFIGURE = f"pass your config file with --config PATH or ${CONFIG_FILE_VARIABLE}=PATH"


def _config_path(args: argparse.Namespace) -> tuple[str, str | None]:
    """The config file to serve, and the option that named it (None: found
    by default). With no file named, ./config.yaml; with none there either
    and no PARSEGATE_*__* variables to build a config from, the demo."""
    if args.config:
        return args.config, "--config"
    if os.environ.get(CONFIG_FILE_VARIABLE):
        return os.environ[CONFIG_FILE_VARIABLE], f"${CONFIG_FILE_VARIABLE}"
    if Path(DEFAULT_CONFIG).exists() or config_variables(os.environ):
        return DEFAULT_CONFIG, None
    return str(DEMO_CONFIG), None


def _serve(args: argparse.Namespace) -> int:
    from gateway.ops.config import ConfigError, load_config
    from gateway.ops.logs import logging_config
    from gateway.upstream.derived_parsers import with_template_parsers
    from gateway.upstream.template_backend import check_templates

    path, named_by = _config_path(args)
    try:
        config = load_config(path)
        check_templates(config.models)
        config = with_template_parsers(config)
    except ConfigError as error:
        missing = named_by and not Path(path).exists()
        hint = f" (named by {named_by}); {HOW_TO_CONFIGURE}, or neither to serve the built-in demo" if missing else ""
        print(f"parsegate: {error}{hint}", file=sys.stderr)
        return 2
    log_format = args.log_format or config.server.log_format
    if path == str(DEMO_CONFIG):
        logging.config.dictConfig(logging_config(log_format))
        logging.getLogger("parsegate.cli").warning(
            "no ./%s here: serving the built-in demo model; %s", DEFAULT_CONFIG, HOW_TO_CONFIGURE
        )
    from gateway.ops.store import StoreUnavailable
    from gateway.serve import CannotListen, serve  # the web stack loads only once there is something to serve

    try:
        serve(
            config,
            path,
            args.host or config.server.host,
            args.port or config.server.port,
            workers=args.workers,
            log_format=log_format,
        )
    except (CannotListen, StoreUnavailable) as error:
        print(f"parsegate: {error}", file=sys.stderr)
        return 1
    return 0


def _health(args: argparse.Namespace) -> int:
    """Exit 0 when the gateway the config describes answers `GET /health`,
    else 1 (a container healthcheck: Docker reads any other code as 1)."""
    from urllib.error import URLError
    from urllib.request import urlopen

    from gateway.ops.config import ConfigError, load_config

    path, _ = _config_path(args)
    try:
        server = load_config(path).server
    except ConfigError as error:
        print(f"parsegate health: {error}", file=sys.stderr)
        return 1
    host = args.host or server.host
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # every interface: loopback
    url = f"http://{f'[{host}]' if ':' in host else host}:{args.port or server.port}/health"
    try:
        with urlopen(url, timeout=args.timeout) as answer:
            status = answer.status
    except (URLError, OSError) as error:
        print(f"parsegate health: {url}: {getattr(error, 'reason', None) or error}", file=sys.stderr)
        return 1
    print(f"{url}: {status}")
    return 0 if status == 200 else 1


def _parsers_for(model: str, as_json: bool) -> int:
    from gateway.ops.model_families import family_of

    match = family_of(model)
    pattern, family = match if match else (None, None)
    pick = {
        "model": model,
        "pattern": pattern,
        "tool_call_parser": family and family.tool_call_parser,
        "reasoning_parser": family and family.reasoning_parser,
    }
    if as_json:
        print(json.dumps(pick))
    elif pattern is None:
        print(f"{model}: no pattern matches; set tool_call_parser / reasoning_parser in config.yaml")
    else:
        print(f"{model}: matches {pattern!r}")
        print(f"  tool_call_parser: {pick['tool_call_parser'] or 'none'}")
        print(f"  reasoning_parser: {pick['reasoning_parser'] or 'none'}")
    return 0


def _derived_parsers(source: str, as_json: bool) -> int:
    """What a chat template implies (docs/derived-parsers.md)."""
    from gateway.ops.config import ConfigError
    from gateway.upstream.derived_parsers import derivation_of

    try:
        found = derivation_of(source)
    except ConfigError as error:
        print(f"parsegate parsers: {error}", file=sys.stderr)
        return 1
    report = found.to_json()
    if as_json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"{source}: {report['origin'] or 'no reasoning or tool-call structure found: served as plain content'}")
    for stage, part in report["parts"].items():
        print(f"  {stage}: {_part_line(part)}")
        for name, value in (report[stage] or {}).items():
            print(f"    {name}: {json.dumps(value, ensure_ascii=False)}")
    print(f"  end_of_turn: {json.dumps(report['end_of_turn'], ensure_ascii=False)}")
    if report["tool_calls"] is not None:
        made = report["call_id_template"]
        print(f"  call_ids: {report['call_ids']}{f' (ids made as {made})' if made else ''}")
    shown = {reason for part in report["parts"].values() for reason in part.get("reasons", ())}
    for reason in report["refused"]:
        if reason not in shown:
            print(f"  refused: {reason}")
    print(f"  analysed in {report['milliseconds']} ms")
    return 0


def _part_line(part: dict) -> str:
    """`recognised as X, by …`, `derived`, or `refused: …` (Derivation.parts)."""
    if part["status"] == "recognised":
        return f"recognised as {part['parser']}, by {part['from']}"
    if part["status"] == "derived":
        return "derived from the template's markers"
    reasons = [reason.removeprefix("reasoning: ").removeprefix("tool calls: ") for reason in part["reasons"]]
    return "refused: " + ("; ".join(reasons) or "nothing found")


def _list_parsers(args: argparse.Namespace) -> int:
    if args.derive is not None:
        return _derived_parsers(args.derive, args.json)
    if args.model is not None:
        return _parsers_for(args.model, args.json)
    tools, reasoning = tool_call_parser_names(), reasoning_parser_names()
    tool_aliases, reasoning_aliases = tool_call_parser_aliases(), reasoning_parser_aliases()
    if args.json:
        listing = {"tool_call_parsers": tools, "reasoning_parsers": reasoning}
        print(json.dumps({**listing, "tool_call_aliases": tool_aliases, "reasoning_aliases": reasoning_aliases}))
    else:
        print("tool-call parsers:", *_named(tools, tool_aliases), sep="\n  ")
        print("reasoning parsers:", *_named(reasoning, reasoning_aliases), sep="\n  ")
    return 0


def _named(names: list[str], aliases: dict[str, str]) -> list[str]:
    """Each name, an alias with the name it stands for (`openai -> gpt-oss`)."""
    return [f"{name} -> {aliases[name]}" if name in aliases else name for name in names]


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


def _parse(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
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
        return _serve(args)
    if args.command == "parsers":
        return _list_parsers(args)
    if args.command == "health":
        return _health(args)
    if args.command == "render":
        return _render(args, commands["render"])
    return _parse(args, commands["parse"])
