"""Gateway macro-benchmark: parsegate next to the bare pass-through proxy, in one run.

Wraps ../shared/bench/run_gateway_bench.py (its fake raw-text backend, load
generator and `pt-sse` pass-through: FastAPI + httpx + sse-starlette, no
parsing), with parsegate added as the `gw` target on bench/gateway.yaml
(qwen3 reasoning + qwen25 tool calls, a tool in every request), with its
request log line written after each response. Each
scenario starts the backend and both proxies, pinned with taskset, and
runs the load against them in turn, so machine noise hits both alike:

  burst  C=32, the backend streams as fast as it can: proxy CPU per chunk
  paced  C=32 streams at 50 chunks/s each: proxy CPU per chunk
  ttfb   C=1: time to first byte, parsegate minus pass-through
  idle   256 open slow streams: memory per open stream

Proxy CPU is divided by the chunks the backend sent (not those the proxy
sent on, which parsing regroups). Prints one table of ratios to the
pass-through against the targets of issue 6.

    python bench/gateway_bench.py [--quick] [--python .venv-bench/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PARSEGATE_SHARED_BENCH", REPO.parent / "shared" / "bench"))
GATEWAY_URL = "http://127.0.0.1:8400/v1/chat/completions"
CHUNKS = 200  # backend chunks of 4 characters per response


def scenarios(quick: bool) -> dict[str, list[str]]:
    repeats = "1" if quick else "3"
    return {
        "burst": ["--scenario", "burst", "-c", "32", "-n", "500" if quick else "2000", "--repeats", repeats],
        "paced": [
            "--scenario",
            "paced",
            "-c",
            "32",
            "-n",
            "64" if quick else "128",
            "--delay-ms",
            "20",
            "--repeats",
            repeats,
        ],
        "ttfb": [
            "--scenario",
            "burst",
            "-c",
            "1",
            "-n",
            "100" if quick else "300",
            "--warmup",
            "16",
            "--repeats",
            repeats,
        ],
        "idle": ["--scenario", "idle", "--streams", "256", "--repeats", repeats],
    }


def run_scenario(python: str, name: str, args: list[str], out: Path, workers: int) -> list[dict]:
    serve = f"{python} -m gateway serve --config {REPO / 'bench' / 'gateway.yaml'} --workers {workers}"
    command = [
        python,
        str(SHARED / "run_gateway_bench.py"),
        *args,
        "--tools",
        "--chunks",
        str(CHUNKS),
        "--targets",
        "pt-sse,gw",
        "--extra",
        f"gw={GATEWAY_URL}::{serve}",
        "--out",
        str(out),
    ]
    print(f"[{name}] {' '.join(command)}", flush=True)
    subprocess.run(command, check=True, env={**os.environ, "BENCH_PY": python}, stdout=sys.stderr)
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def median(rows: list[dict], label: str, value) -> float:
    return statistics.median(value(row) for row in rows if row["label"] == label)


def cpu_per_upstream_chunk(row: dict) -> float:
    """Proxy CPU µs per backend chunk: role+text chunks, the finish chunk and usage."""
    return row["procs"]["proxy"]["cpu_ms_per_req"] * 1000 / (CHUNKS + 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one repeat, fewer requests (about 3 minutes)")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with the repo and ../shared/bench/requirements-bench.txt"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="parsegate serve --workers N (pinned, like the pass-through, to the one proxy core)",
    )
    parser.add_argument("--only", default="", help="comma list of scenarios: burst,paced,ttfb,idle")
    args = parser.parse_args()
    chosen = set(filter(None, args.only.split(",")))
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="parsegate-bench-") as folder:
        for name, scenario_args in scenarios(args.quick).items():
            if not chosen or name in chosen:
                results[name] = run_scenario(
                    args.python, name, scenario_args, Path(folder) / f"{name}.jsonl", args.workers
                )

    lines = [
        "| measure | pass-through `pt-sse` | parsegate | parsegate / pass-through | target | met |",
        "|---|---|---|---|---|---|",
    ]

    def ratio_row(measure: str, rows: list[dict], value, target: float, unit: str) -> None:
        floor, gateway = median(rows, "pt-sse", value), median(rows, "gw", value)
        ratio = gateway / floor
        met = "yes" if ratio <= target else f"NO, by {100 * (ratio / target - 1):.0f}%"
        lines.append(f"| {measure} | {floor:.1f} {unit} | {gateway:.1f} {unit} | {ratio:.2f}× | ≤ {target}× | {met} |")

    for name, target in (("burst", 1.3), ("paced", 1.2)):
        if name in results:
            ratio_row(f"proxy CPU per backend chunk, {name}", results[name], cpu_per_upstream_chunk, target, "µs")
    if "ttfb" in results:
        rows = results["ttfb"]
        floor, gateway = (median(rows, label, lambda row: row["ttfb_ms_p50"]) for label in ("pt-sse", "gw"))
        added = gateway - floor
        met = "yes" if added <= 1.0 else f"NO, by {added - 1.0:.2f} ms"
        lines.append(
            f"| TTFB p50 at one stream | {floor:.2f} ms | {gateway:.2f} ms | +{added:.2f} ms | ≤ +1 ms | {met} |"
        )
    if "idle" in results:
        ratio_row("memory per open stream", results["idle"], lambda row: row["kb_per_stream"], 1.3, "KB")
    errors = {
        label: sum(row["errors"] for rows in results.values() for row in rows if row["label"] == label)
        for label in ("pt-sse", "gw")
    }
    lines.append(
        f"| errors, all runs | {errors['pt-sse']} | {errors['gw']} | | 0 | {'yes' if errors['gw'] == 0 else 'NO'} |"
    )
    if "burst" in results:
        foreign = statistics.median(row.get("foreign_cpu_s", 0) for row in results["burst"] if "foreign_cpu_s" in row)
        lines.append(f"\nCPU used by other processes on the machine during each burst run (median): {foreign:.1f} s")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
