"""Store benchmark: the latency a stored Responses request adds over a
stateless one (`store: false`), with the default SQLite store (docs/state.md).

One `parsegate serve` process on the built-in demo backend (no network, no
model), so the figures are the gateway's own time, and this process as its
client over loopback. Each round sends, one after another, a `store: false`
request, a stored one (`store: true`: one write) and a chained one
(`previous_response_id`: one read and one write), non-streamed, so machine
noise hits the three alike. Prints p50 and p99 of each and what the stored
and chained requests add over the stateless one (target of issue 25:
≤ 1 ms p50, ≤ 5 ms p99).

    python -m bench.store_bench [--rounds 2000]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

BODY = {"model": "demo", "input": "What is the weather in Paris?"}
WARM_UP = 50


def _percentiles(seconds: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    cuts = statistics.quantiles(seconds, n=100)
    return cuts[49] * 1000, cuts[98] * 1000


def _timed(client: httpx.Client, body: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    response = client.post("/v1/responses", json=body)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed, response.json()


def _gateway(folder: Path) -> tuple[subprocess.Popen, str]:
    config = {"models": [{"name": "demo", "backend": {"demo": True}}], "store": {"url": str(folder / "bench.db")}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(folder / "config.yaml"), "--port", str(port)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:  # uvicorn says when it listens
        if "Uvicorn running on" in line:
            threading.Thread(target=process.stderr.read, daemon=True).start()  # the request log, drained
            return process, f"http://127.0.0.1:{port}"
    raise RuntimeError("parsegate serve did not start")


def _run(rounds: int, folder: Path) -> None:
    process, url = _gateway(folder)
    times: dict[str, list[float]] = {"store: false": [], "stored": [], "chained": []}
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            for round_number in range(rounds + WARM_UP):
                stateless, _ = _timed(client, {**BODY, "store": False})
                stored, response = _timed(client, {**BODY, "store": True})
                chained, _ = _timed(client, {**BODY, "previous_response_id": response["id"]})
                if round_number >= WARM_UP:
                    times["store: false"].append(stateless)
                    times["stored"].append(stored)
                    times["chained"].append(chained)
    finally:
        process.terminate()
        process.wait()
    base50, base99 = _percentiles(times["store: false"])
    print(f"{'request':<14}{'p50 ms':>9}{'p99 ms':>9}{'added p50':>11}{'added p99':>11}")
    for name, seconds in times.items():
        p50, p99 = _percentiles(seconds)
        print(f"{name:<14}{p50:>9.3f}{p99:>9.3f}{p50 - base50:>11.3f}{p99 - base99:>11.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2000)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        _run(arguments.rounds, Path(folder))


if __name__ == "__main__":
    main()
