"""Parser micro-benchmark: streamed cost per chunk as the input grows.

For every registered tool-call format (aliases share a row): one call whose
string argument grows 1 -> 4 -> 16 -> 64 KB, and one call with 2,000 small
parameters. For every reasoning format: reasoning text 1 -> 64 KB, with
stream_reasoning on and off. Everything is fed in 4-character chunks, laid
out so that the markers are cut by a chunk boundary. Prints CPU
microseconds per chunk (best of several runs) and the log-log slope of
total time between 16 and 64 KB (1.0 = linear, 2.0 = quadratic; the median
over repeats of back-to-back run pairs), then the targets of issue 6.

    python -m bench.parser_bench [--quick] [--names qwen25,qwen3] [--chunk 4] [--derive TEMPLATE]

`--derive TEMPLATE` also times deriving the parsers of a chat template
(loading it and analysing it, apart, as start-up does; docs/derived-parsers.md) and
adds rows for the formats derived from it, to set beside the named ones.
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import statistics
import time

from bench.workloads import (
    aliases,
    distinct_reasoning_parsers,
    distinct_tool_parsers,
    long_argument_call,
    many_parameters_call,
    reasoning_output,
    reasoning_pipeline,
    streamed_cpu_seconds,
    tool_pipeline,
)
from parsers import reasoning_format, reasoning_parser_names, tool_call_parser_names, tool_format
from parsers.registry import reasoning_parser_name, tool_call_parser_name
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

SLOPE_TARGET, TOOL_TARGET_US, REASONING_TARGET_US = 1.1, 5.0, 3.0


def slope(runs: dict[int, list[float]], small: int, large: int, texts: dict[int, str]) -> float:
    """Log-log slope of total time against input size between two sizes:
    the median over repeats of the ratio of two runs made back to back, so
    that a slow moment of the machine, which lands in one run of a pair,
    does not tilt the figure."""
    ratio = statistics.median(big / little for little, big in zip(runs[small], runs[large], strict=True))
    return math.log(ratio) / math.log(len(texts[large]) / len(texts[small]))


def growth(make, texts: dict[int, str], chunk: int, repeats: int) -> tuple[dict[int, float], float]:
    """µs per chunk for each size, the best of `repeats` runs interleaved
    across sizes (so a busy moment of the machine hits one run of each, not
    every run of one size), and the slope between the two largest sizes."""
    sizes = sorted(texts)
    runs: dict[int, list[float]] = {size: [] for size in sizes}
    per_chunk = {}
    for _ in range(repeats):
        for size in sizes:
            gc.collect()  # the garbage of earlier runs, so later formats do not run on a cluttered heap
            seconds, chunks = streamed_cpu_seconds(make(), texts[size], chunk)
            runs[size].append(seconds)
            per_chunk[size] = chunks
    best = {size: min(runs[size]) * 1e6 / per_chunk[size] for size in sizes}
    return best, slope(runs, sizes[-2], sizes[-1], texts)


def label(name: str, names: list[str], lookup) -> str:
    return ", ".join(f"`{alias}`" for alias in aliases(name, names, lookup))


def derived_rows(source: str, sizes: list[int], chunk: int, repeats: int) -> None:
    """The start-up cost of deriving `source`'s parsers, and the derived formats' rows."""
    from gateway.templates.analysis import derive
    from gateway.templates.sources import load_chat_template

    loading, analysis = [], []
    for _ in range(5):
        started = time.perf_counter()
        template = load_chat_template(source)
        loaded = time.perf_counter()
        found = derive(template)
        loading.append(loaded - started)
        analysis.append(time.perf_counter() - loaded)
    print(
        f"\nderiving {source}: analysis {min(analysis) * 1000:.1f} ms, loading (compiling the template, "
        f"as template mode does anyway) {min(loading) * 1000:.1f} ms, best of 5; {found.origin}"
    )
    tool, reasoning = found.tool_stage(), found.reasoning_stage()
    if isinstance(tool, ToolFormat):
        texts = {s: long_argument_call(tool, s, chunk) for s in sizes}
        per_size, grow = growth(functools.partial(tool_pipeline, tool), texts, chunk, repeats)
        print(f"| derived tool-call format | {' | '.join(f'{per_size[s]:.2f}' for s in sizes)} | {grow:.2f} |")
    if isinstance(reasoning, ReasoningFormat):
        texts = {s: reasoning_output(reasoning, s, chunk) for s in sizes}
        per_size, grow = growth(functools.partial(reasoning_pipeline, reasoning), texts, chunk, repeats)
        print(f"| derived reasoning format | {' | '.join(f'{per_size[s]:.2f}' for s in sizes)} | {grow:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="16 and 64 KB only, best of 2 (about 20 s)")
    parser.add_argument("--names", default="", help="comma list: only these parser names (tool or reasoning)")
    parser.add_argument("--chunk", type=int, default=4, help="characters per streamed chunk")
    parser.add_argument("--params", type=int, default=2000, help="parameters in the many-parameters call")
    parser.add_argument("--derive", metavar="TEMPLATE", help="also time deriving this chat template's parsers")
    args = parser.parse_args()
    sizes, repeats = ([16, 64], 2) if args.quick else ([1, 4, 16, 64], 9)
    only = set(filter(None, args.names.split(",")))
    tool_names, reasoning_names = tool_call_parser_names(), reasoning_parser_names()

    def chosen(names: list[str], registered: list[str], lookup, spelled) -> list[str]:
        """The formats asked for by any of their names, in either spelling
        (one row per format)."""
        wanted = {spelled(name) for name in only}
        return [n for n in names if not only or wanted & set(aliases(n, registered, lookup))]

    print(
        f"CPU µs per {args.chunk}-character chunk, best of {repeats}; "
        f"slope = log-log slope of total time from {sizes[-2]} to {sizes[-1]} KB (1.0 = linear)\n"
    )
    print(f"| tool-call parser | {' | '.join(f'{s} KB' for s in sizes)} | slope | {args.params} params | slope |")
    print(f"|---|{'---|' * len(sizes)}---|---|---|")
    at_64, worst_slope = [], 0.0
    for name in chosen(distinct_tool_parsers(), tool_names, tool_format, tool_call_parser_name):
        make = functools.partial(tool_pipeline, name)
        per_size, grow = growth(make, {s: long_argument_call(name, s, args.chunk) for s in sizes}, args.chunk, repeats)
        params = {n: many_parameters_call(name, n, args.chunk) for n in (args.params // 4, args.params)}
        per_count, params_grow = growth(make, params, args.chunk, repeats)
        at_64.append(per_size[sizes[-1]])
        worst_slope = max(worst_slope, grow, params_grow)
        cells = " | ".join(f"{per_size[s]:.2f}" for s in sizes)
        print(
            f"| {label(name, tool_names, tool_format)} | {cells} | {grow:.2f} | {per_count[args.params]:.2f} | {params_grow:.2f} |"
        )

    print(f"\n| reasoning parser | stream_reasoning | {' | '.join(f'{s} KB' for s in sizes)} | slope |")
    print(f"|---|---|{'---|' * len(sizes)}---|")
    worst_reasoning = 0.0
    for name in chosen(distinct_reasoning_parsers(), reasoning_names, reasoning_format, reasoning_parser_name):
        for streamed in (True, False):
            make = functools.partial(reasoning_pipeline, name, streamed)
            texts = {s: reasoning_output(name, s, args.chunk) for s in sizes}
            per_size, grow = growth(make, texts, args.chunk, repeats)
            worst_reasoning = max(worst_reasoning, *per_size.values())
            worst_slope = max(worst_slope, grow)
            cells = " | ".join(f"{per_size[s]:.2f}" for s in sizes)
            print(
                f"| {label(name, reasoning_names, reasoning_format)} | {'on' if streamed else 'off'} | {cells} | {grow:.2f} |"
            )

    if args.derive:
        derived_rows(args.derive, sizes, args.chunk, repeats)

    print("\n| target | measured | met |\n|---|---|---|")
    if at_64:
        mean = statistics.mean(at_64)
        print(
            f"| tool parser mean at {sizes[-1]} KB ≤ {TOOL_TARGET_US} µs/chunk | {mean:.2f} | {'yes' if mean <= TOOL_TARGET_US else 'NO'} |"
        )
    if worst_reasoning:
        print(
            f"| reasoning parser ≤ {REASONING_TARGET_US} µs/chunk (worst) | {worst_reasoning:.2f} | "
            f"{'yes' if worst_reasoning <= REASONING_TARGET_US else 'NO'} |"
        )
    print(
        f"| every format linear, slope ≤ {SLOPE_TARGET} (worst) | {worst_slope:.2f} | {'yes' if worst_slope <= SLOPE_TARGET else 'NO'} |"
    )


if __name__ == "__main__":
    main()
