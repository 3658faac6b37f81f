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

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"-?\d+\.\d+"
SURFACES = ("chat", "responses", "messages", "template")


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_gateway_bench_measures_every_surface_paced_and_searches_capacity():
    out = run("bench.gateway_bench", "--smoke", "--only", "paced,paired,stepped,capacity", "--workers", "2")
    cpu_rows = re.findall(rf"^\| ([a-z-]+) \| {NUMBER} \| {NUMBER}× \|.*\| (\d+) \| {NUMBER} \|$", out, re.M)
    assert cpu_rows == [(target, "0") for target in ("pt-sse", *SURFACES)], out  # every stream ended well
    gap_rows = re.findall(rf"^\| ([a-z-]+) \| {NUMBER} \| (?:[+-]\d+\.\d+)? \| {NUMBER} \| {NUMBER} \|$", out, re.M)
    assert gap_rows == ["direct", "pt-sse", *SURFACES], out
    pair_rows = re.findall(
        rf"^\| ([a-z-]+) \| {NUMBER} \| {NUMBER} \| {NUMBER}× \| ≤ 0.5× \| (?:yes|NO) \| (\d+) \|$", out, re.M
    )
    # each surface beside the pass-through: the streams on their own clocks, then on one shared clock
    assert pair_rows == [(target, "0") for target in SURFACES] * 2, out
    assert "stepped (every stream's chunks on one 20 ms clock)" in out
    capacity = re.findall(
        r"^\| chat \| (\d) \| (?:≥ )?\d+ \| ≥ (\d+) \| [\d.]* \| \d+: (?:yes|no) \(p99 gap ", out, re.M
    )
    assert capacity == [("2", "500")], out  # two workers: their CPU summed, each pinned


def test_the_agent_turn_bench_prices_each_agents_turn_against_the_pass_through():
    out = run("bench.agent_turn_bench", "--smoke")
    rows = re.findall(rf"^\| ([a-z-]+) \| (\d+) \| \d+ \| {NUMBER} \| {NUMBER} \| {NUMBER}× \| (\d+) \|$", out, re.M)
    assert rows == [(name, turns, "0") for turns in ("0", "5") for name in ("claude-code", "codex", "template")], out
    slopes = re.findall(rf"^([a-z-]+): each KB of history adds {NUMBER} µs to parsegate, {NUMBER} µs to the", out, re.M)
    assert slopes == ["claude-code", "codex", "template"], out


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


def _row(ok: int, gap: float, cpu: float, kinds: dict[str, int]) -> dict:
    return {
        "requests": ok + sum(kinds.values()),
        "ok": ok,
        "errors": sum(kinds.values()),
        "error_kinds": kinds,
        "wall_s": 9.0 + gap,
        "gap_ms_p99": gap,
        "ttfb_ms_p99": gap / 10,
        "stream_p99_gap_ms_worst": None,
        "cpu_s": {"proxy": cpu},
    }


def test_loads_side_by_side_count_every_stream_and_the_worst_gap():
    from bench.gateway_bench import merged

    row = merged([_row(100, 21.5, 3.0, {}), _row(98, 24.0, 3.1, {"timeout": 2})])
    assert (row["requests"], row["ok"], row["errors"], row["error_kinds"]) == (200, 198, 2, {"timeout": 2})
    assert (row["gap_ms_p99"], row["ttfb_ms_p99"], row["wall_s"]) == (24.0, 2.4, 33.0)
    assert row["cpu_s"] == {"proxy": 3.1}  # the same proxy, counted over the widest window


def test_several_workers_share_the_streams_out_over_the_load_cores(monkeypatch):
    from bench import gateway_bench
    from bench.gateway_bench import QUICK, Bench

    monkeypatch.setattr(gateway_bench, "cpu_plan", lambda workers: ([0, 1, 2, 3], [4, 5], [6, 7, 8]))
    started: list[tuple[dict, list[int]]] = []

    def start_load(self, target, stream, options, cores):
        started.append((options, cores))

    monkeypatch.setattr(Bench, "_start_load", start_load)
    Bench(sys.executable, 4, QUICK)._start_loads("chat", True, {"concurrency": 512, "requests": 1024, "ramp": 5.0})
    assert started == [
        ({"concurrency": 171, "requests": 342, "ramp": 5.0}, [6]),
        ({"concurrency": 171, "requests": 342, "ramp": 5.0}, [7]),
        ({"concurrency": 170, "requests": 340, "ramp": 5.0}, [8]),
    ]
    started.clear()
    Bench(sys.executable, 1, QUICK)._start_loads("chat", True, {"concurrency": 512, "requests": 1024})
    assert started == [({"concurrency": 512, "requests": 1024}, [6, 7, 8])]  # one worker: one generator


def test_fake_backends_share_one_port():
    from bench.gateway_bench import free_port, wait_up

    port = free_port()
    command = [sys.executable, str(ROOT / "bench" / "fake_backend.py"), "--port", str(port), "--reuse-port"]
    backends = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for backend in backends:  # both listen before the first connection (each says so once bound)
            assert backend.stdout is not None and "listening" in backend.stdout.readline()
        for _ in range(40):  # a new connection each: the kernel spreads them over the two
            wait_up(f"http://127.0.0.1:{port}/health")
    finally:
        for backend in backends:
            backend.terminate()
    served = [re.search(r"'requests': (\d+)", backend.communicate(timeout=30)[0]) for backend in backends]
    assert all(found and int(found.group(1)) > 0 for found in served), served


def test_a_target_whose_streams_all_failed_is_a_row_of_its_errors():
    from bench.gateway_bench import ratio_table

    def row(cpu: float | None, errors: int) -> dict:
        return {"cpu_us_per_chunk": cpu, "errors": errors, "foreign_cpu_s": 0.5}

    rows = {"pt-sse": [row(300.0, 0)], "chat": [row(150.0, 0)], "responses": [row(None, 8)]}
    lines = ratio_table(rows, "cpu_us_per_chunk", "µs per chunk", 0.5)
    assert lines[2:] == [
        "| pt-sse | 300.0 | 1.00× |  |  | 0 | 0.5 |",
        "| chat | 150.0 | 0.50× | ≤ 0.5× | yes | 0 | 0.5 |",
        "| responses | — | — | ≤ 0.5× | NO | 8 | 0.5 |",
    ]


def test_the_render_bench_times_each_stage_and_each_way_a_worker_is_asked():
    out = run("bench.render_bench", "--repeats", "2", "--renders", "2", "--rounds", "1")
    figure = rf"{NUMBER} \({NUMBER}–{NUMBER}\)"
    stages = re.findall(rf"^\| ([^|]+) \| \d+ \| \d+ \|(?: {figure} \|){{7}}$", out, re.M)
    assert stages == ["captured Claude Code", "+ 100 turns"], out
    ways = re.findall(rf"^\| ([^|]+) \| ([a-z ]+) \| {NUMBER} \+ {NUMBER} \| {figure} \| {figure} \|$", out, re.M)
    expected = [(name, way) for name in stages for way in ("whole", "again", "next turn")]
    assert ways == expected, out
