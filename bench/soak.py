"""Soak test: N concurrent streams through the gateway for T minutes, in
front of the repo's fake backend (bench/fake_backend.py, or
$PARSEGATE_BENCH/fake_backend.py), on loopback only. Reports completed streams, errors by kind, and the
gateway's RSS over time with its trend (MB per minute after warm-up).
Not run in CI; it stops by itself after --minutes.

    python bench/soak.py --streams 200 --minutes 10 [--delay-ms 20] [--chunks 200]

Each stream is a streamed chat completion with a tool; it counts as an
error when the status is not 200, an SSE error event arrives, `[DONE]`
is missing, no tool call came back, or the request fails or takes longer
than --timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
FAKE_BACKEND = Path(os.environ.get("PARSEGATE_BENCH", ROOT / "bench")) / "fake_backend.py"  # the repo's own copy
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
BODY = {"model": "fake", "messages": [{"role": "user", "content": "Weather?"}], "tools": TOOLS, "stream": True}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid` (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args[1]} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within {seconds} s")


async def one_stream(client: httpx.AsyncClient, url: str) -> str | None:
    """One streamed request; None when it went well, else the error kind."""
    saw_done = saw_call = False
    async with client.stream("POST", url, json=BODY) as response:
        if response.status_code != 200:
            return f"status_{response.status_code}"
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                saw_done = True
            elif line.startswith("data:") and '"error"' in line:
                return "error_event"
            elif '"tool_calls"' in line:
                saw_call = True
    if not saw_done:
        return "no_done"
    return None if saw_call else "no_tool_call"


async def stream_loop(url: str, until: float, timeout: float, outcomes: Counter) -> None:
    async with httpx.AsyncClient(timeout=timeout) as client:
        while time.monotonic() < until:
            try:
                error = await asyncio.wait_for(one_stream(client, url), timeout)
            except (TimeoutError, httpx.HTTPError) as failure:
                error = type(failure).__name__
            outcomes[error or "ok"] += 1


async def sample_rss(pid: int, until: float, every: float, started: float, samples: list, outcomes: Counter) -> None:
    while time.monotonic() < until:
        await asyncio.sleep(every)
        minute = (time.monotonic() - started) / 60
        samples.append((minute, rss_mb(pid)))
        errors = sum(count for kind, count in outcomes.items() if kind != "ok")
        print(
            f"{minute:6.1f} min  {outcomes['ok']:8d} streams  {errors:6d} errors  RSS {samples[-1][1]:7.1f} MB",
            flush=True,
        )


def slope(samples: list[tuple[float, float]]) -> float:
    """Least-squares MB per minute."""
    n = len(samples)
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    spread = sum((x - mean_x) ** 2 for x, _ in samples)
    return sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread if spread else 0.0


def start(command: list[str], health: str) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until_up(health, process)
    return process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200, help="concurrent streams (default 200)")
    parser.add_argument("--minutes", type=float, default=10, help="how long (default 10)")
    parser.add_argument("--chunks", type=int, default=200, help="backend chunks per stream (default 200)")
    parser.add_argument("--chunk-chars", type=int, default=4, help="characters per backend chunk (default 4)")
    parser.add_argument("--delay-ms", type=float, default=20, help="backend delay between chunks (default 20)")
    parser.add_argument("--sample-seconds", type=float, default=10, help="RSS sampling period (default 10)")
    parser.add_argument("--timeout", type=float, default=60, help="per-stream limit in seconds (default 60)")
    args = parser.parse_args()
    if not FAKE_BACKEND.exists():
        return print(f"soak: no fake backend at {FAKE_BACKEND} (set PARSEGATE_BENCH)", file=sys.stderr) or 2

    backend_port, gateway_port = free_port(), free_port()
    config = {
        "server": {"host": "127.0.0.1", "port": gateway_port},
        "models": [
            {
                "name": "fake",
                "backend": {"url": f"http://127.0.0.1:{backend_port}/v1"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            }
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as config_file:
        yaml.safe_dump(config, config_file)
        config_file.flush()
        backend = start(
            [
                sys.executable,
                str(FAKE_BACKEND),
                "--port",
                str(backend_port),
                "--chunk-chars",
                str(args.chunk_chars),
                "--num-chunks",
                str(args.chunks),
                "--delay-ms",
                str(args.delay_ms),
            ],
            f"http://127.0.0.1:{backend_port}/health",
        )
        try:
            gateway = start(
                [sys.executable, "-m", "gateway", "serve", "--config", config_file.name],
                f"http://127.0.0.1:{gateway_port}/health",
            )
            try:
                return report(asyncio.run(soak(args, gateway, gateway_port)), args)
            finally:
                gateway.terminate()
                gateway.wait(timeout=30)
        finally:
            backend.terminate()
            backend.wait(timeout=10)


async def soak(args: argparse.Namespace, gateway: subprocess.Popen, port: int) -> tuple[Counter, list]:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    started = time.monotonic()
    until = started + args.minutes * 60
    outcomes: Counter = Counter()
    samples = [(0.0, rss_mb(gateway.pid))]
    print(f"soak: {args.streams} streams for {args.minutes} min, gateway pid {gateway.pid}, RSS {samples[0][1]:.1f} MB")
    await asyncio.gather(
        sample_rss(gateway.pid, until, args.sample_seconds, started, samples, outcomes),
        *(stream_loop(url, until, args.timeout, outcomes) for _ in range(args.streams)),
    )
    return outcomes, samples


def report(result: tuple[Counter, list], args: argparse.Namespace) -> int:
    outcomes, samples = result
    errors = {kind: count for kind, count in outcomes.items() if kind != "ok"}
    after_warmup = samples[len(samples) // 2 :] if len(samples) >= 4 else samples
    print(f"\nstreams completed: {outcomes['ok']}, errors: {sum(errors.values())} {errors or ''}")
    print(f"RSS: start {samples[0][1]:.1f} MB, peak {max(y for _, y in samples):.1f} MB, end {samples[-1][1]:.1f} MB")
    print(f"RSS trend over the second half: {slope(after_warmup):+.2f} MB/min")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
