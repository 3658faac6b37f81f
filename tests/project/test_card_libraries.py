"""The two card-library comparisons in bench/ run end to end (in their
quick mode) and print their tables and ratio lines, so that the figures in
bench/README.md stay reproducible. Each runs as its own process, as a
reader would run it: importing sse-starlette patches uvicorn's exit
handler, which the servers of the other tests should not share."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench.partial_json_bench import REWRITTEN
from tests.project import ROOT

pytestmark = pytest.mark.bench

NUMBER = r"\d+\.\d+"


def run_quick(module: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", module, "--quick"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


def test_the_sse_comparison_prints_each_writer_and_the_ratio():
    out = run_quick("bench.sse_library_bench")
    for writer in ("bare", "EventStream", "EventSourceResponse", "EventSourceResponse, dict events"):
        assert len(re.findall(rf"^\| {re.escape(writer)} \| {NUMBER} \| -?{NUMBER} \|$", out, re.M)) == 2, out
    ratios = re.findall(
        rf"^ratio EventSourceResponse / EventStream: {NUMBER}x per event \([+-]{NUMBER} µs\)", out, re.M
    )
    assert len(ratios) == 2, out
    assert "one stream, 2000 events" in out and "4 concurrent streams, 500 events each" in out


def test_the_partial_json_comparison_prints_sizes_ratios_and_rewrites():
    out = run_quick("bench.partial_json_bench")
    for size in (1, 4):
        assert re.search(rf"^\| {size} KB \| {NUMBER} \| {NUMBER} \| {NUMBER}x \|$", out, re.M), out
    for arguments in REWRITTEN:
        [line] = [line for line in out.splitlines() if line.startswith(f"{arguments} -> ")]
        ours, theirs = line.removeprefix(f"{arguments} -> ").split(" | ")
        assert ours == arguments and theirs != arguments
