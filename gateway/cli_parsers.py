"""`parsegate parsers`: the parser names, the parsers a model name picks
(`--for`), or what a chat template implies (`--derive`,
docs/derived-parsers.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from parsers import reasoning_parser_aliases, reasoning_parser_names, tool_call_parser_aliases, tool_call_parser_names


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


def parsers_command(args: argparse.Namespace) -> int:
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
