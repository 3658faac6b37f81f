"""WebSocket benchmark: parsegate's CPU per Responses event over the
WebSocket transport (gateway/api/responses_socket.py) against the same
events over SSE, in one run.

One parsegate (bench/gateway.yaml) in front of ../shared/bench/fake_backend.py
(200 chunks of 4 characters, a Qwen3-style reasoning and tool call), pinned
to cpu1; the backend and this client (aiohttp, in this process) on cpu0.
Each repeat sends the same Responses request (bench/surface_requests.py,
`store: false`) `--requests` times over `--streams` concurrent streams, once
as `POST /v1/responses` with SSE and once as `response.create` messages on
one WebSocket per stream, so machine noise hits both alike. Proxy CPU
(utime + stime of /proc/PID/stat) is divided by the events the client
received. Prints the medians and the WebSocket's ratio to SSE against the
goal of issue 44 (≤ 1.0×: no more CPU per event than SSE).

    python -m bench.socket_bench [--requests 1000] [--streams 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import aiohttp

from bench.gateway_bench import wait_up
from bench.surface_requests import BODIES, CHUNKS, REPO, SHARED

GATEWAY = "http://127.0.0.1:8400"
BODY = {**BODIES["responses"], "store": False}
TICKS = os.sysconf("SC_CLK_TCK")
COMPLETED = '{"type":"response.completed"'


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


async def sse_stream(session: aiohttp.ClientSession, requests: int) -> int:
    events = 0
    for _ in range(requests):
        async with session.post(GATEWAY + "/v1/responses", json={**BODY, "stream": True}) as answer:
            async for line in answer.content:
                events += line.startswith(b"event: ")
    return events


async def socket_stream(session: aiohttp.ClientSession, requests: int) -> int:
    events = 0
    create = json.dumps({"type": "response.create", **BODY})
    async with session.ws_connect(GATEWAY.replace("http", "ws", 1) + "/v1/responses") as socket:
        for _ in range(requests):
            await socket.send_str(create)
            while True:
                message = await socket.receive_str()
                events += 1
                if message.startswith(COMPLETED):
                    break
    return events


async def load(transport: str, requests: int, streams: int, proxy_pid: int) -> dict:
    """The proxy's CPU per event for `requests` responses over `streams` streams."""
    run = sse_stream if transport == "sse" else socket_stream
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        await asyncio.gather(*(run(session, 4) for _ in range(streams)))  # warm-up
        before = cpu_seconds(proxy_pid)
        counts = await asyncio.gather(*(run(session, requests // streams) for _ in range(streams)))
        spent = cpu_seconds(proxy_pid) - before
    events = sum(counts)
    responses = requests // streams * streams
    return {"us_per_event": spent * 1e6 / events, "events_per_response": events / responses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the repo and the bench tools")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    backend = [args.python, str(SHARED / "fake_backend.py"), "--port", "8100", "--num-chunks", str(CHUNKS)]
    serve = [args.python, "-m", "gateway", "serve", "--config", str(REPO / "bench" / "gateway.yaml")]
    started = [
        subprocess.Popen(["taskset", "-c", "0", *backend], cwd=SHARED, stdout=subprocess.DEVNULL),
        subprocess.Popen(
            ["taskset", "-c", "1", *serve], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ),
    ]
    rows: dict[str, list[dict]] = {"sse": [], "websocket": []}
    try:
        wait_up("http://127.0.0.1:8100/health")
        wait_up(GATEWAY + "/health")
        for repeat in range(args.repeats):
            for transport, transport_rows in rows.items():
                row = asyncio.run(load(transport, args.requests, args.streams, started[1].pid))
                transport_rows.append(row)
                print(f"[{repeat}] {transport}: {row['us_per_event']:.2f} µs/event", flush=True)
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=30)
    sse = statistics.median(row["us_per_event"] for row in rows["sse"])
    print("| transport | proxy CPU per event | / SSE | events per response |")
    print("|---|---|---|---|")
    for transport, transport_rows in rows.items():
        figure = statistics.median(row["us_per_event"] for row in transport_rows)
        events = transport_rows[0]["events_per_response"]
        print(f"| {transport} | {figure:.2f} µs | {figure / sse:.2f}× | {events:.0f} |")


if __name__ == "__main__":
    main()
