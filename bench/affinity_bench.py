"""Session-affine routing against round-robin (issue 45 section 1).

Four fake backends, each keeping an LRU of cached prompt prefixes and
answering with a time to first token proportional to the uncached part of
the prompt, behind one gateway entry with the four as `backend.urls`; 50
agent sessions of growing history run at once. Prints, for round-robin,
affinity (`session_overload: null`) and affinity with the in-flight bound
(the default 1.5): the prefix-cache hit rate (of turns after the first),
mean and p99 time to first token, and each URL's share of requests against
the mean.

    python -m bench.affinity_bench            # 50 sessions of 8 turns
    python -m bench.affinity_bench --quick    # 20 sessions of 4 turns
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import threading
import time
from collections import OrderedDict
from hashlib import blake2b

import httpx
import orjson
import uvicorn
from aiohttp import web

from gateway.app import create_app
from gateway.ops.config import Config

BACKENDS = 4
CACHE_PREFIXES = 600  # prefixes (one per message boundary) a backend keeps
PREFILL_SECONDS_PER_CHAR = 2e-6  # about 8 µs a token, 4 characters a token
BASE_TTFT = 0.002
SYSTEM_CHARS = 8000
TURN_CHARS = 1500
ANSWER = "x" * 200


class PrefixCacheBackend:
    """A raw-text server with an LRU of prefix hashes."""

    def __init__(self) -> None:
        self.cache: OrderedDict[bytes, None] = OrderedDict()
        self.requests = 0
        self.hits = 0
        self.continued = 0

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        messages = body["messages"]
        prefixes, digest = [], blake2b(digest_size=16)
        for message in messages:
            digest.update(orjson.dumps([message.get("role"), message.get("content")]))
            prefixes.append(digest.copy().digest())
        cached = 0
        for index in range(len(prefixes) - 1, -1, -1):
            if prefixes[index] in self.cache:
                cached = index + 1
                break
        self.requests += 1
        if len(messages) > 2:
            self.continued += 1
            self.hits += cached >= len(messages) - 1
        uncached = sum(len(str(message.get("content"))) for message in messages[cached:])
        await asyncio.sleep(BASE_TTFT + uncached * PREFILL_SECONDS_PER_CHAR)
        digest.update(orjson.dumps(["assistant", ANSWER]))  # the answer's tokens stay cached too
        for prefix in [*prefixes, digest.digest()]:
            self.cache[prefix] = None
            self.cache.move_to_end(prefix)
        while len(self.cache) > CACHE_PREFIXES:
            self.cache.popitem(last=False)
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        chunk = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]}
        await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await response.write(b"data: " + orjson.dumps(done) + b"\n\ndata: [DONE]\n\n")
        return response


def _serve_in_thread(app: object) -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def _start_backend(backend: PrefixCacheBackend) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", backend.chat)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"


async def _session(client: httpx.AsyncClient, number: int, turns: int, ttfts: list[float]) -> None:
    system = {"role": "system", "content": f"agent {number}: " + "s" * SYSTEM_CHARS}
    messages: list[dict] = [system]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"step {turn} " + "u" * TURN_CHARS})
        body = {"model": "agent", "messages": messages, "stream": True}
        started = time.perf_counter()
        first = None
        text = ""
        async with client.stream("POST", "/v1/chat/completions", json=body, headers={"session_id": f"s{number}"}) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: {") and first is None:
                    first = time.perf_counter() - started
                if line.startswith("data: {"):
                    for choice in orjson.loads(line[6:]).get("choices", []):
                        text += choice.get("delta", {}).get("content") or ""
        ttfts.append(first or 0.0)
        messages.append({"role": "assistant", "content": text})


async def _run(mode: str, sessions: int, turns: int) -> str:
    backends = [PrefixCacheBackend() for _ in range(BACKENDS)]
    started = [await _start_backend(backend) for backend in backends]
    routing: dict = {"routing": "round_robin"} if mode == "round-robin" else {}
    if mode == "affinity":
        routing["session_overload"] = None
    entry = {"name": "agent", "backend": {"urls": [url for _, url in started], "server": "vllm", **routing}}
    gateway = await asyncio.to_thread(_serve_in_thread, create_app(Config.model_validate({"models": [entry]})))
    ttfts: list[float] = []
    limits = httpx.Limits(max_connections=sessions)
    async with httpx.AsyncClient(base_url=gateway, timeout=60, limits=limits) as client:
        await asyncio.gather(*(_session(client, number, turns, ttfts) for number in range(sessions)))
    for runner, _ in started:
        await runner.cleanup()
    hits = sum(backend.hits for backend in backends) / max(1, sum(backend.continued for backend in backends))
    mean_load = sum(backend.requests for backend in backends) / BACKENDS
    worst = max(backend.requests for backend in backends) / mean_load
    ttfts.sort()
    p99 = ttfts[min(len(ttfts) - 1, int(len(ttfts) * 0.99))]
    loads = "/".join(str(backend.requests) for backend in backends)
    return f"| {mode} | {hits:.1%} | {statistics.mean(ttfts) * 1000:.1f} | {p99 * 1000:.1f} | {loads} | {worst:.2f}× |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    sessions, turns = (20, 4) if options.quick else (50, 8)
    print(f"{BACKENDS} backends, {sessions} sessions of {turns} turns, run at once")
    print("| routing | prefix-cache hits | mean TTFT ms | p99 TTFT ms | requests per URL | busiest / mean |")
    print("|---|---|---|---|---|---|")
    for mode in ("round-robin", "affinity", "affinity-with-load"):
        print(asyncio.run(_run(mode, sessions, turns)), flush=True)


if __name__ == "__main__":
    main()
