"""The gateway and server-side benchmarks run end to end in their smallest
mode and print a figure for every target, so that the figures in
bench/README.md stay reproducible. Each runs as its own process, as a
reader runs it (the gateway bench starts its backend, the pass-through
and parsegate on free loopback ports and stops them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"-?\d+\.\d+"
SURFACES = ("chat", "responses", "messages", "template")


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_gateway_bench_measures_every_surface_paced_and_searches_capacity():
    out = run("bench.gateway_bench", "--smoke", "--only", "paced,paired,capacity", "--workers", "2")
    cpu_rows = re.findall(rf"^\| ([a-z-]+) \| {NUMBER} \| {NUMBER}× \|.*\| (\d+) \| {NUMBER} \|$", out, re.M)
    assert cpu_rows == [(target, "0") for target in ("pt-sse", *SURFACES)], out  # every stream ended well
    gap_rows = re.findall(rf"^\| ([a-z-]+) \| {NUMBER} \| (?:[+-]\d+\.\d+)? \| {NUMBER} \| {NUMBER} \|$", out, re.M)
    assert gap_rows == ["direct", "pt-sse", *SURFACES], out
    pair_rows = re.findall(
        rf"^\| ([a-z-]+) \| {NUMBER} \| {NUMBER} \| {NUMBER}× \| ≤ 0.5× \| (?:yes|NO) \| (\d+) \|$", out, re.M
    )
    assert pair_rows == [(target, "0") for target in SURFACES], out  # each surface beside the pass-through
    capacity = re.findall(
        r"^\| chat \| (\d) \| (?:≥ )?\d+ \| ≥ (\d+) \| [\d.]* \| \d+: (?:yes|no) \(p99 gap ", out, re.M
    )
    assert capacity == [("2", "500")], out  # two workers: their CPU summed, each pinned


def test_the_server_side_bench_prices_each_layer():
    out = run("bench.server_side_bench", "--quick")
    layers = re.findall(rf"^\| ([^|]+) \| {NUMBER} \| [+-]\d+\.\d+ \| {NUMBER} \| [+-]\d+\.\d+ \|$", out, re.M)
    assert [layer.strip() for layer in layers] == [
        "raw ASGI",
        "+ StreamingResponse",
        "+ EventStream",
        "Starlette route",
        "FastAPI route",
        "+ disconnect",
        "+ dependency",
        "+ validation",
        "+ middleware",
    ], out
    assert re.search(r"^whole stack over raw ASGI: [+-]\d+\.\d+ µs per request, [+-]\d+\.\d+ µs per event$", out, re.M)
