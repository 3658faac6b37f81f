"""Surface benchmark: parsegate's CPU per streamed backend chunk on the
Messages and Responses surfaces against the chat surface, in one run.

One parsegate (bench/gateway.yaml: qwen3 reasoning + qwen25 tool calls)
in front of ../shared/bench/fake_backend.py (200 chunks of 4 characters, a
Qwen3-style reasoning and tool call), pinned to cpu1; the backend and
../shared/bench/load.py on cpu0. Each repeat runs the same load (32
streams, a tool in every request) against `/v1/chat/completions`,
`/v1/messages` and `/v1/responses` in turn, so machine noise hits the
three alike. Proxy CPU is divided by the chunks the backend sent (text
chunks, the finish chunk and usage). Prints the medians and each
surface's ratio to chat against the target of issue 14 (≤ 1.15×).

    python -m bench.surface_bench [--requests 2000] [--repeats 3] [--python .venv-bench/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.gateway_bench import wait_up
from bench.surface_requests import BODIES, CHUNKS, PATHS, REPO, SHARED, SURFACES

GATEWAY = "http://127.0.0.1:8400"
TARGET = 1.15


def load(python: str, surface: str, requests: int, proxy_pid: int, out: Path) -> dict:
    command = ["taskset", "-c", "0", python, str(SHARED / "load.py"), "--url", GATEWAY + PATHS[surface]]
    command += ["--label", surface, "-c", "32", "-n", str(requests), "--warmup", "64"]
    command += ["--body", json.dumps(BODIES[surface]), "--pid", f"proxy={proxy_pid}", "--json-out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cpu_per_chunk(row: dict) -> float:
    return row["procs"]["proxy"]["cpu_ms_per_req"] * 1000 / (CHUNKS + 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the repo and the bench tools")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    backend = [args.python, str(SHARED / "fake_backend.py"), "--port", "8100", "--num-chunks", str(CHUNKS)]
    serve = [args.python, "-m", "gateway", "serve", "--config", str(REPO / "bench" / "gateway.yaml")]
    started = [
        subprocess.Popen(["taskset", "-c", "0", *backend], cwd=SHARED, stdout=subprocess.DEVNULL),
        subprocess.Popen(
            ["taskset", "-c", "1", *serve], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ),
    ]
    rows: dict[str, list[dict]] = {surface: [] for surface in SURFACES}
    try:
        wait_up("http://127.0.0.1:8100/health")
        wait_up(GATEWAY + "/health")
        with tempfile.TemporaryDirectory(prefix="parsegate-surfaces-") as folder:
            for repeat in range(args.repeats):
                for surface in SURFACES:
                    row = load(args.python, surface, args.requests, started[1].pid, Path(folder) / "rows.jsonl")
                    rows[surface].append(row)
                    print(
                        f"[{repeat}] {surface}: {cpu_per_chunk(row):.1f} µs/chunk, errors {row['errors']}", flush=True
                    )
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=30)
    chat = statistics.median(cpu_per_chunk(row) for row in rows["chat"])
    print("| surface | proxy CPU per backend chunk | / chat | target | met | errors |")
    print("|---|---|---|---|---|---|")
    for surface, surface_rows in rows.items():
        figure = statistics.median(cpu_per_chunk(row) for row in surface_rows)
        ratio = figure / chat
        met = "" if surface == "chat" else ("yes" if ratio <= TARGET else "NO")
        errors = sum(row["errors"] for row in surface_rows)
        target = "" if surface == "chat" else f"≤ {TARGET}×"
        print(f"| {surface} | {figure:.1f} µs | {ratio:.2f}× | {target} | {met} | {errors} |")


if __name__ == "__main__":
    main()
