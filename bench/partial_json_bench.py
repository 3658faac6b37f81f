"""Streamed tool-call arguments: partial-json-parser against parsegate.

partial-json-parser has no incremental API: its users (streaming tool
parsers) keep the call's arguments text received so far and parse all of
it again on every chunk, to see how far the value has got. Here it is
given exactly that, and only that: the arguments text of one `write_file`
call (`bench/workloads.py`), growing by 4 characters per chunk, parsed
whole each time (no marker search, no re-encoding). parsegate's whole
qwen25 pipeline (`make_pipeline(None, "qwen25")`) reads the model's whole
text, `<tool_call>` markers and all, in the same 4-character chunks.

The `content` string is 1, 4, 16 and 64 KB. Figures are CPU ms of the
process for the whole stream (best of `--repeats`, fewer runs where they
take more than 5 s in all), and their ratio.

Then a few arguments as a model writes them, streamed through both: what
parsegate passes on (its `CallArgs` text, the model's own bytes) and what
the peers' glue sends (`json.dumps` of the parsed value, which is how a
parsed value becomes an arguments string again).

    python -m bench.partial_json_bench [--quick] [--sizes 1,4,16,64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from functools import partial

from partial_json_parser import loads

from bench.workloads import long_argument_call, streamed_cpu_seconds, tool_pipeline
from parsers import CallArgs, tool_format

PARSER = "qwen25"
CHUNK = 4
REWRITTEN = [
    '{"price": 1.50, "limit": 1e3}',
    '{"name": "caf\\u00e9 \\/ bar"}',
    '{"ratio": 1e400}',
]


def _arguments(text: str) -> str:
    """The arguments JSON inside one rendered qwen25 call."""
    start = text.index('{"path"')
    return text[start : text.index("}", text.rindex('"')) + 1]


def library_cpu_seconds(arguments: str) -> float:
    """CPU time to parse the growing arguments text once per chunk."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.process_time()
        for end in range(CHUNK, len(arguments) + CHUNK, CHUNK):
            loads(arguments[:end])
        return time.process_time() - started
    finally:
        if collecting:
            gc.enable()


def parsegate_cpu_seconds(text: str) -> float:
    return streamed_cpu_seconds(tool_pipeline(PARSER), text, CHUNK)[0]


def best_of(measure, repeats: int, budget: float = 5.0) -> float:
    """The least of up to `repeats` runs, stopping once `budget` CPU seconds
    are spent (the library's 64 KB stream takes about a minute per run)."""
    runs: list[float] = []
    while len(runs) < repeats and sum(runs) < budget:
        runs.append(measure())
    return min(runs)


def compare(sizes: list[int], repeats: int) -> list[tuple[int, float, float]]:
    rows = []
    for kilobytes in sizes:
        text = long_argument_call(PARSER, kilobytes, CHUNK)
        arguments = _arguments(text)
        assert loads(arguments) == json.loads(arguments)
        library = best_of(partial(library_cpu_seconds, arguments), repeats)
        ours = best_of(partial(parsegate_cpu_seconds, text), repeats)
        rows.append((kilobytes, library, ours))
    return rows


def streamed_arguments(arguments: str) -> tuple[str, str]:
    """(parsegate's arguments text, the peers' `json.dumps` of the library's
    value) for one call streamed in 4-character chunks."""
    text = tool_format(PARSER).render_call("f", arguments)
    pipeline = tool_pipeline(PARSER)
    events = [event for i in range(0, len(text), CHUNK) for event in pipeline.feed(text[i : i + CHUNK])]
    ours = "".join(event.text for event in events + pipeline.finish() if isinstance(event, CallArgs))
    value = None
    for end in range(CHUNK, len(arguments) + CHUNK, CHUNK):
        value = loads(arguments[:end])
    return ours, json.dumps(value, ensure_ascii=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4,16,64", help="string argument sizes, KB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 and 4 KB, one repeat")
    args = parser.parse_args(argv)
    sizes = [1, 4] if args.quick else [int(size) for size in args.sizes.split(",")]
    repeats = 1 if args.quick else args.repeats
    print(f"one {PARSER} call, a string argument of N KB, fed in {CHUNK}-character chunks; CPU ms, best of {repeats}")
    print("| size | partial-json-parser, arguments re-parsed per chunk | parsegate qwen25 pipeline | ratio |")
    print("|---|---|---|---|")
    for kilobytes, library, ours in compare(sizes, repeats):
        print(f"| {kilobytes} KB | {library * 1e3:.1f} | {ours * 1e3:.1f} | {library / ours:.1f}x |")
    print("\nthe model wrote -> parsegate sends | the peers' glue sends")
    for arguments in REWRITTEN:
        ours, theirs = streamed_arguments(arguments)
        print(f"{arguments} -> {ours} | {theirs}")


if __name__ == "__main__":
    main()
