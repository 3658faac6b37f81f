"""The two card-library comparisons in bench/ run end to end (in their
quick mode) and print their tables and ratio lines, so that the figures in
bench/README.md stay reproducible."""

from __future__ import annotations

import re

from bench import partial_json_bench, sse_library_bench

NUMBER = r"\d+\.\d+"


def test_the_sse_comparison_prints_each_writer_and_the_ratio(capsys):
    sse_library_bench.main(["--quick"])
    out = capsys.readouterr().out
    for writer in ("bare", "EventStream", "EventSourceResponse", "EventSourceResponse, dict events"):
        assert len(re.findall(rf"^\| {re.escape(writer)} \| {NUMBER} \| -?{NUMBER} \|$", out, re.M)) == 2, out
    ratios = re.findall(
        rf"^ratio EventSourceResponse / EventStream: {NUMBER}x per event \([+-]{NUMBER} µs\)", out, re.M
    )
    assert len(ratios) == 2, out
    assert "one stream, 2000 events" in out and "4 concurrent streams, 500 events each" in out


def test_the_partial_json_comparison_prints_sizes_ratios_and_rewrites(capsys):
    partial_json_bench.main(["--quick"])
    out = capsys.readouterr().out
    for size in (1, 4):
        assert re.search(rf"^\| {size} KB \| {NUMBER} \| {NUMBER} \| {NUMBER}x \|$", out, re.M), out
    for arguments in partial_json_bench.REWRITTEN:
        [line] = [line for line in out.splitlines() if line.startswith(f"{arguments} -> ")]
        ours, theirs = line.removeprefix(f"{arguments} -> ").split(" | ")
        assert ours == arguments and theirs != arguments
