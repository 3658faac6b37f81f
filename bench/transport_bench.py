"""Upstream HTTP client comparison: what reading a backend's event stream
costs the gateway process per chunk, with each candidate client.

The backend is `../shared/bench/fake_backend.py` (started here on its own
core when the machine has two; 200 chunks of 4 characters, a Qwen3 reply
with `<think>` and a `<tool_call>`). This process is pinned to one core
(`os.sched_setaffinity`, as `taskset -c` does) and runs every candidate in
turn, round after round (interleaved, so a busy machine weighs on all of
them alike). Each candidate opens `--streams` concurrent streamed chat
requests and yields every `data:` payload, as the gateway's reader does;
the figure is the process's CPU time (`time.process_time`: user + system,
not wall time) per chunk, the median over `--rounds`.

- `httpx aiter_bytes`: parsegate before, `AsyncClient.stream` and its
  line splitter (gateway/upstream/sse_reader.py) over `aiter_bytes`;
- `httpx aiter_raw`: the same without httpx's content decoders;
- `httpx aiter_lines`: httpx's own text and line decoders;
- `aiohttp iter_any`: aiohttp's client (C HTTP parser), the same splitter
  over `StreamReader.iter_any`;
- `aiohttp readline`: aiohttp's own line reader (`async for line in
  response.content`);
- `httptools protocol`: a minimal client on httptools and an asyncio
  `Protocol` (the floor: no pool, no timeouts, no decoding).

Non-streamed: the same requests with `"stream": false`, the answer read
whole (httpx `post`, aiohttp `read`), CPU per request.

Paced: the backend waits `--delay-ms` between chunks, so every chunk is a
separate read, as with a GPU server; burst: no delay, chunks coalesce.

    python -m bench.transport_bench [--quick] [--streams 32] [--paced-streams 48]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import cast

import aiohttp
import httptools
import httpx

ROOT = Path(__file__).resolve().parents[1]
FAKE_BACKEND = Path(os.environ.get("PARSEGATE_BENCH", ROOT / "bench")) / "fake_backend.py"  # the repo's own copy
BODY = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
WHOLE_BODY = BODY.replace(b'"stream":true', b'"stream":false')
HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


async def split_lines(pieces: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The `data:` payloads of a byte stream, as parsegate's reader splits them."""
    pending = b""
    async for received in pieces:
        lines = (pending + received).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:].strip()


async def via_httpx(client: httpx.AsyncClient, url: str, mode: str) -> int:
    count = 0
    async with client.stream("POST", url, content=BODY, headers=HEADERS) as response:
        if mode == "lines":
            async for line in response.aiter_lines():
                count += line.startswith("data:")
        else:
            pieces = response.aiter_raw() if mode == "raw" else response.aiter_bytes()
            async for _ in split_lines(pieces):
                count += 1
    return count


async def via_aiohttp(session: aiohttp.ClientSession, url: str, mode: str) -> int:
    count = 0
    async with session.post(url, data=BODY, headers=HEADERS) as response:
        if mode == "readline":
            async for line in response.content:
                count += line.startswith(b"data:")
        else:
            async for _ in split_lines(response.content.iter_any()):
                count += 1
    return count


class _Stream(asyncio.Protocol):
    """One request on its own connection, its body read with httptools."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.pieces: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.parser = httptools.HttpResponseParser(self)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.WriteTransport, transport).write(self.request)

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.pieces.put_nowait(body)

    def on_message_complete(self) -> None:
        self.pieces.put_nowait(None)

    async def body(self) -> AsyncIterator[bytes]:
        while (piece := await self.pieces.get()) is not None:
            yield piece


async def via_httptools(host: str, port: int, path: str) -> int:
    request = (
        f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(BODY)}\r\nconnection: close\r\n\r\n"
    ).encode() + BODY
    transport, stream = await asyncio.get_running_loop().create_connection(lambda: _Stream(request), host, port)
    count = 0
    try:
        async for _ in split_lines(stream.body()):
            count += 1
    finally:
        transport.close()
    return count


async def whole_via_httpx(client: httpx.AsyncClient, url: str) -> int:
    response = await client.post(url, content=WHOLE_BODY, headers=HEADERS)
    return len(response.content) > 0


async def whole_via_aiohttp(session: aiohttp.ClientSession, url: str) -> int:
    async with session.post(url, data=WHOLE_BODY, headers=HEADERS) as response:
        return len(await response.read()) > 0


async def cpu_per_chunk(run_one: Callable[[], object], streams: int) -> float:
    """CPU µs of this process per chunk, `streams` streams at once."""
    start = time.process_time()
    counts = await asyncio.gather(*(run_one() for _ in range(streams)))  # type: ignore[misc]
    spent = time.process_time() - start
    return spent * 1e6 / max(1, sum(counts))


async def compare(port: int, streams: int, query: str, rounds: int, *, whole: bool = False) -> dict[str, float]:
    path = f"/v1/chat/completions?{query}"
    url = f"http://127.0.0.1:{port}{path}"
    limits = httpx.Limits(max_connections=4096, max_keepalive_connections=512)
    async with (
        httpx.AsyncClient(limits=limits, timeout=None) as client,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=4096), auto_decompress=True) as session,
    ):
        candidates: dict[str, Callable[[], object]] = {
            "httpx aiter_bytes": lambda: via_httpx(client, url, "bytes"),
            "httpx aiter_raw": lambda: via_httpx(client, url, "raw"),
            "httpx aiter_lines": lambda: via_httpx(client, url, "lines"),
            "aiohttp iter_any": lambda: via_aiohttp(session, url, "any"),
            "aiohttp readline": lambda: via_aiohttp(session, url, "readline"),
            "httptools protocol": lambda: via_httptools("127.0.0.1", port, path),
        }
        if whole:  # a non-streamed answer, read whole: CPU per request
            candidates = {
                "httpx post": lambda: whole_via_httpx(client, url),
                "aiohttp read": lambda: whole_via_aiohttp(session, url),
            }
        for run_one in candidates.values():  # warm the pools
            await cpu_per_chunk(run_one, streams)
        figures: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(rounds):
            for name, run_one in candidates.items():
                figures[name].append(await cpu_per_chunk(run_one, streams))
    return {name: statistics.median(values) for name, values in figures.items()}


def _start_backend(port: int) -> subprocess.Popen:
    cores = sorted(os.sched_getaffinity(0))
    pin = ["taskset", "-c", str(cores[-1])] if len(cores) > 1 else []
    backend = subprocess.Popen([*pin, sys.executable, str(FAKE_BACKEND), "--port", str(port)])
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return backend
        except httpx.TransportError:
            time.sleep(0.1)
    backend.kill()
    raise SystemExit("the fake backend did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8187)
    parser.add_argument("--streams", type=int, default=32, help="burst: concurrent streams")
    parser.add_argument("--paced-streams", type=int, default=48)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="paced: the backend's wait between chunks")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds, 60 paced chunks")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    paced_chunks = 60 if args.quick else 200
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    backend = _start_backend(args.port)
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        burst = runner(compare(args.port, args.streams, "chunks=200", rounds))
        paced = runner(
            compare(args.port, args.paced_streams, f"chunks={paced_chunks}&delay_ms={args.delay_ms:g}", rounds)
        )
        whole = runner(compare(args.port, args.streams, "chunks=200", rounds, whole=True))
    finally:
        backend.terminate()
        backend.wait()
    base_burst, base_paced = burst["httpx aiter_bytes"], paced["httpx aiter_bytes"]
    print(f"CPU µs per chunk, median of {rounds} rounds, this process pinned to one core")
    print(f"| client | burst, {args.streams} streams | paced, {args.paced_streams} streams at {args.delay_ms:g} ms |")
    print("|---|---|---|")
    for name in burst:
        print(
            f"| {name} | {burst[name]:.1f} ({burst[name] / base_burst:.2f}×) "
            f"| {paced[name]:.1f} ({paced[name] / base_paced:.2f}×) |"
        )
    print(f"\nNon-streamed, {args.streams} at once: CPU µs per request")
    for name, figure in whole.items():
        print(f"| {name} | {figure:.1f} ({figure / whole['httpx post']:.2f}×) |")


if __name__ == "__main__":
    main()
