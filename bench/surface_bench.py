"""Surface benchmark: gateway CPU per streamed backend chunk for each client
surface (chat completions, Responses) in one run, same gateway, same backend.

Starts ../shared/bench/fake_backend.py (Qwen3 reasoning + a qwen25 tool
call in 4-character chunks) and `parsegate serve` on bench/gateway.yaml's
model, pinned apart with taskset when there are two cores, then streams
batches of requests at concurrency C through each surface in turn,
alternating, and reads the gateway process's CPU time around each batch
(/proc). Prints the median CPU µs per backend chunk of each surface and
its ratio to chat (target: within 1.15×).

    python -m bench.surface_bench [--requests 400] [--repeats 5] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PARSEGATE_SHARED_BENCH", REPO.parent / "shared" / "bench"))
CHUNKS = 200
TOOL = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
BODIES = {
    "chat": (
        "/v1/chat/completions",
        {
            "model": "fake",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"type": "function", "function": TOOL}],
        },
    ),
    "responses": (
        "/v1/responses",
        {"model": "fake", "stream": True, "input": "Weather in Paris?", "tools": [{"type": "function", **TOOL}]},
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pinned(command: list[str], cpu: str) -> list[str]:
    two_cores = (os.cpu_count() or 1) >= 2 and shutil.which("taskset")
    return ["taskset", "-c", cpu, *command] if two_cores else command


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


async def batch(base: str, surface: str, requests: int, concurrency: int) -> None:
    path, body = BODIES[surface]
    queue = iter(range(requests))

    async def worker(client: httpx.AsyncClient) -> None:
        for _ in queue:
            async with client.stream("POST", base + path, json=body) as response:
                if response.status_code != 200:
                    raise RuntimeError(f"{surface}: HTTP {response.status_code}")
                async for _ in response.aiter_raw():
                    pass

    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency)) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="streams per batch")
    parser.add_argument("--repeats", type=int, default=5, help="batches per surface, alternating")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    backend_port, gateway_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="parsegate-surfaces-") as folder:
        config = Path(folder) / "gateway.yaml"
        text = (REPO / "bench" / "gateway.yaml").read_text().replace("8100", str(backend_port))
        config.write_text(text.replace("port: 8400", f"port: {gateway_port}"))
        backend_command = [sys.executable, str(SHARED / "fake_backend.py"), "--port", str(backend_port)]
        backend_command += ["--chunk-chars", "4", "--num-chunks", str(CHUNKS)]
        gateway_command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
        gateway_command += ["--port", str(gateway_port)]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        backend = subprocess.Popen(pinned(backend_command, "0"), **quiet)
        gateway = subprocess.Popen(pinned(gateway_command, "1"), cwd=REPO, **quiet)
        try:
            base = f"http://127.0.0.1:{gateway_port}"
            wait_up(f"http://127.0.0.1:{backend_port}/health")
            wait_up(f"{base}/health")
            for surface in BODIES:  # warm-up
                asyncio.run(batch(base, surface, 32, args.concurrency))
            per_chunk: dict[str, list[float]] = {surface: [] for surface in BODIES}
            for _ in range(args.repeats):
                for surface in BODIES:
                    before = cpu_seconds(gateway.pid)
                    asyncio.run(batch(base, surface, args.requests, args.concurrency))
                    used = cpu_seconds(gateway.pid) - before
                    per_chunk[surface].append(used * 1e6 / (args.requests * (CHUNKS + 2)))
        finally:
            for process in (gateway, backend):
                process.terminate()
                process.wait(timeout=30)
    chat = statistics.median(per_chunk["chat"])
    print("| surface | gateway CPU per backend chunk (median) | / chat | target |")
    print("|---|---|---|---|")
    for surface, figures in per_chunk.items():
        figure = statistics.median(figures)
        target = "" if surface == "chat" else "≤ 1.15×"
        print(f"| {surface} | {figure:.1f} µs | {figure / chat:.2f}× | {target} |")


if __name__ == "__main__":
    main()
