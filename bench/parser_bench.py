"""Parser micro-benchmark: streamed cost per chunk as the input grows.

For every registered tool-call format: one call whose string argument
grows 1 -> 4 -> 16 -> 64 KB, and one call whose small parameters grow
125 -> 500 -> 2,000. For every reasoning format: reasoning text
1 -> 64 KB, with stream_reasoning on and off. Everything is fed in
4-character chunks, so markers are split. Prints microseconds per chunk
and the log-log slope between 16 and 64 KB (1.0 = linear, 2.0 = quadratic).

    python bench/parser_bench.py [--sizes 1,4,16,64] [--chunk 4] [--names qwen25,hermes]
"""

from __future__ import annotations

import argparse
import math
import time

import orjson

from parsers import make_pipeline, reasoning_format, reasoning_parser_names, tool_call_parser_names, tool_format


def feed_all(pipeline, text: str, chunk: int) -> tuple[float, int]:
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    started = time.process_time()
    for piece in pieces:
        pipeline.feed(piece)
    pipeline.finish()
    return time.process_time() - started, len(pieces)


def tool_text(name: str, kilobytes: int) -> str:
    value = ("lorem ipsum dolor sit amet " * 40)[:1023] + "\\n"
    arguments = '{"path": "/tmp/out.txt", "content": "' + value * kilobytes + '"}'
    return "Writing it.\n" + tool_format(name).render_call("write_file", arguments)


def many_parameters_text(name: str, count: int) -> str:
    arguments = orjson.dumps({f"p{i}": (i if i % 2 else f"v{i}") for i in range(count)}).decode()
    return tool_format(name).render_call("configure", arguments)


def reasoning_text(name: str, kilobytes: int) -> str:
    fmt = reasoning_format(name)
    return fmt.start + ("thinking about it " * 57)[:1024] * kilobytes + fmt.end + "Answer."


def measure(make, text: str, chunk: int, repeats: int = 5) -> float:
    """Best of `repeats`, in CPU time of this process: microseconds per chunk."""
    best = math.inf
    for _ in range(repeats):
        seconds, chunks = feed_all(make(), text, chunk)
        best = min(best, seconds * 1e6 / chunks)
    return best


def slope(us_small: float, us_large: float, size_small: int, size_large: int) -> float:
    """Log-log slope of total time against input size."""
    total_small, total_large = us_small * size_small, us_large * size_large
    return math.log(total_large / total_small) / math.log(size_large / size_small)


def report(label: str, per_size: dict[int, float], sizes: list[int]) -> None:
    cells = " | ".join(f"{per_size[s]:.2f}" for s in sizes)
    print(f"| {label} | {cells} | {slope(per_size[sizes[-2]], per_size[sizes[-1]], sizes[-2], sizes[-1]):.2f} |")


def table(title: str, columns: list[str]) -> None:
    print(f"\n{title}\n\n| parser | {' | '.join(columns)} | slope |\n|---|{'---|' * len(columns)}---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,4,16,64", help="KB sizes")
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--names", default="", help="only these parser names")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(filter(None, args.names.split(",")))
    counts = [125, 500, 2000]
    names = [name for name in tool_call_parser_names() if not only or name in only]
    reasoning_names = [name for name in reasoning_parser_names() if not only or name in only]
    print(f"µs per {args.chunk}-char chunk (CPU time, best of 5); slope = log-log of total time over the last two sizes")
    table("One call, one growing string argument", [f"{s} KB" for s in sizes])
    for name in names:
        make = lambda: make_pipeline(None, name)  # noqa: E731
        report(f"tool `{name}`", {s: measure(make, tool_text(name, s), args.chunk) for s in sizes}, sizes)
    table("One call, many small parameters", [f"{n} params" for n in counts])
    for name in names:
        make = lambda: make_pipeline(None, name)  # noqa: E731
        report(f"tool `{name}`", {n: measure(make, many_parameters_text(name, n), args.chunk) for n in counts}, counts)
    table("Reasoning text", [f"{s} KB" for s in sizes])
    for name in reasoning_names:
        for streamed in (True, False):
            make = lambda: make_pipeline(name, None, force_reasoning=False, stream_reasoning=streamed)  # noqa: E731
            label = f"reasoning `{name}` stream_reasoning={'on' if streamed else 'off'}"
            report(label, {s: measure(make, reasoning_text(name, s), args.chunk) for s in sizes}, sizes)

if __name__ == "__main__":
    main()
