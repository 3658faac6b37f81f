"""Session-affine routing against round-robin (issue 45 section 1).

Four fake backends, each keeping an LRU of cached prompt prefixes and
prefilling one request at a time (the rest wait in its queue), with a time
to first token proportional to the uncached part of the prompt; they serve
vLLM's load gauges (`vllm:num_requests_running`, `vllm:num_requests_waiting`,
`vllm:kv_cache_usage_perc`) on `/metrics`. One gateway entry has the four as `backend.urls`; 50 agent
sessions of growing history run at once, started one after another over
5 s. Prints, for round-robin, affinity
(`session_overload: never`), affinity with the in-flight bound (the default
1.5) and affinity with the bound and the load gauges (`load_gauges`,
scraped every 0.1 s), and the last two again with other traffic on the first
backend (4 requests of 100 ms of prefill always there, sent to it directly
as another replica's would be, unseen by this gateway but in the gauges):
the prefix-cache hit rate (of turns after the first),
mean and p99 time to first token as the backends model it (the wait in
their queue and the prefill of the uncached part) and as the sessions see it
through parsegate, and each URL's share of requests against the mean.

The gateway runs in a process of its own, pinned to the first core
(`taskset`), and the backends and the sessions in this process, pinned to
the second, where the machine has two.

    python -m bench.affinity_bench            # 50 sessions of 8 turns
    python -m bench.affinity_bench --quick    # 20 sessions of 4 turns
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from hashlib import blake2b
from pathlib import Path

import httpx
import orjson
import yaml
from aiohttp import web

from bench.gateway_bench import free_port, taskset, wait_up
from bench.surface_requests import REPO

BACKENDS = 4
CACHE_PREFIXES = 600  # prefixes (one per message boundary) a backend keeps
PREFILL_SECONDS_PER_CHAR = 1e-5  # about 40 µs a token (4 characters a token): 25,000 tokens a second of prefill
BASE_TTFT = 0.002
SYSTEM_CHARS = 8000
TURN_CHARS = 1500
ANSWER = "x" * 200
OTHER = "+other"  # a mode's suffix: other traffic loads the first backend besides
MODES = (
    "round-robin",
    "affinity",
    "affinity-with-load",
    "affinity-with-gauges",
    "affinity-with-load" + OTHER,
    "affinity-with-gauges" + OTHER,
)
OTHER_STREAMS = 4  # requests the other traffic keeps on the first backend, one after another each
OTHER_CHARS = 10000  # each of them a new prompt: 100 ms of prefill
# seconds between two scrapes of the backends' gauges: in proportion to this
# bench's requests (about 0.1 s each, where a real one streams for seconds)
GAUGES_INTERVAL = 0.1
KV_SEQUENCES = 8  # the sequences a backend's KV cache holds at once
ARRIVALS_SECONDS = 5.0  # the sessions start one after another over this long, not all in one instant


class PrefixCacheBackend:
    """A raw-text server with an LRU of prefix hashes and one prefill lane."""

    def __init__(self) -> None:
        self.cache: OrderedDict[bytes, None] = OrderedDict()
        self.requests = 0
        self.hits = 0
        self.continued = 0
        self.prefill = asyncio.Lock()
        self.waiting = 0
        self.others = 0  # requests of the other traffic
        self.ttfts: list[float] = []  # from each request's arrival to its first token: queue and prefill

    async def metrics(self, request: web.Request) -> web.Response:
        """vLLM's gauges: the request in the prefill lane runs and holds KV
        cache (one of `KV_SEQUENCES`); the cached prefixes are evictable, so
        not in use, as vLLM counts them."""
        running = int(self.prefill.locked())
        text = (
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0"}} {running}\n'
            "# TYPE vllm:num_requests_waiting gauge\n"
            f'vllm:num_requests_waiting{{engine="0"}} {self.waiting}\n'
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f'vllm:kv_cache_usage_perc{{engine="0"}} {running / KV_SEQUENCES}\n'
        )
        return web.Response(text=text, content_type="text/plain")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        messages = body["messages"]
        other = "x-other-traffic" in request.headers  # queued and prefilled, counted apart
        self.others += other
        prefixes, digest = [], blake2b(digest_size=16)
        for message in messages:
            digest.update(orjson.dumps([message.get("role"), message.get("content")]))
            prefixes.append(digest.copy().digest())
        cached = 0
        for index in range(len(prefixes) - 1, -1, -1):
            if prefixes[index] in self.cache:
                cached = index + 1
                break
        if not other:
            self.requests += 1
        if len(messages) > 2 and not other:
            self.continued += 1
            self.hits += cached >= len(messages) - 1
        uncached = sum(len(str(message.get("content"))) for message in messages[cached:])
        arrived = time.perf_counter()
        self.waiting += 1
        async with self.prefill:
            self.waiting -= 1
            await asyncio.sleep(BASE_TTFT + uncached * PREFILL_SECONDS_PER_CHAR)
        if not other:
            self.ttfts.append(time.perf_counter() - arrived)
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


async def _start_backend(backend: PrefixCacheBackend) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", backend.chat)
    app.router.add_get("/metrics", backend.metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"


async def _session(client: httpx.AsyncClient, number: int, turns: int, ttfts: list[float], start: float) -> None:
    await asyncio.sleep(start)
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


async def _other_traffic(client: httpx.AsyncClient, url: str, number: int) -> None:
    """Requests sent to the backend at `url` directly (another gateway
    replica's, say), one after another, each a new prompt, until cancelled."""
    for count in itertools.count():
        prompt = f"other {number} {count} " + "o" * OTHER_CHARS
        body = {"model": "agent", "messages": [{"role": "user", "content": prompt}], "stream": True}
        async with client.stream("POST", f"{url}/chat/completions", json=body, headers={"x-other-traffic": "1"}) as r:
            async for _ in r.aiter_bytes():
                pass


def _entry(mode: str, urls: list[str]) -> dict:
    mode = mode.removesuffix(OTHER)
    backend: dict = {"urls": urls, "server": "vllm"}
    if mode == "round-robin":
        backend["routing"] = "round_robin"
    elif mode == "affinity":
        backend["session_overload"] = "never"
    elif mode == "affinity-with-gauges":
        backend["load_gauges"] = {"interval": GAUGES_INTERVAL}
    return {"name": "agent", "backend": backend}


def _start_gateway(mode: str, urls: list[str], folder: Path, core: list[int]) -> tuple[subprocess.Popen, str]:
    """parsegate serving the four backends for `mode`, in its own process on `core`."""
    config = folder / f"{mode}.yaml"
    config.write_text(yaml.safe_dump({"server": {"host": "127.0.0.1"}, "models": [_entry(mode, urls)]}))
    port = free_port()
    serve = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    here = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen([*taskset(core), *serve] if core else serve, cwd=folder, env=here, **quiet)
    url = f"http://127.0.0.1:{port}"
    wait_up(url + "/health")
    return process, url


async def _run(mode: str, sessions: int, turns: int, folder: Path, core: list[int]) -> str:
    backends = [PrefixCacheBackend() for _ in range(BACKENDS)]
    started = [await _start_backend(backend) for backend in backends]
    process, gateway = await asyncio.to_thread(_start_gateway, mode, [url for _, url in started], folder, core)
    ttfts: list[float] = []
    limits = httpx.Limits(max_connections=sessions + OTHER_STREAMS)
    try:
        async with httpx.AsyncClient(base_url=gateway, timeout=120, limits=limits) as client:
            others = OTHER_STREAMS if mode.endswith(OTHER) else 0
            loading = [asyncio.create_task(_other_traffic(client, started[0][1], number)) for number in range(others)]
            starts = [number * ARRIVALS_SECONDS / sessions for number in range(sessions)]
            await asyncio.gather(
                *(_session(client, number, turns, ttfts, starts[number]) for number in range(sessions))
            )
            for task in loading:
                task.cancel()
            await asyncio.gather(*loading, return_exceptions=True)
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 30)
        for runner, _ in started:
            await runner.cleanup()
    hits = sum(backend.hits for backend in backends) / max(1, sum(backend.continued for backend in backends))
    mean_load = sum(backend.requests for backend in backends) / BACKENDS
    worst = max(backend.requests for backend in backends) / mean_load
    modelled = _mean_p99([ttft for backend in backends for ttft in backend.ttfts])
    loads = "/".join(
        f"{backend.requests}" + (f" (+{backend.others})" if backend.others else "") for backend in backends
    )
    return f"| {mode} | {hits:.1%} | {modelled} | {_mean_p99(ttfts)} | {loads} | {worst:.2f}× |"


def _mean_p99(seconds: list[float]) -> str:
    """`mean / p99` in milliseconds."""
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.mean(ordered) * 1000:.0f} / {p99 * 1000:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--modes", default=",".join(MODES), help="a comma list of: " + ", ".join(MODES))
    options = parser.parse_args()
    sessions, turns = (20, 4) if options.quick else (50, 8)
    cores = sorted(os.sched_getaffinity(0))
    gateway_core = cores[:1] if len(cores) > 1 else []
    if gateway_core:
        os.sched_setaffinity(0, set(cores[1:]))  # the backends and the sessions
    where = f"parsegate on core {gateway_core[0]}, backends and sessions on {cores[1:]}" if gateway_core else "unpinned"
    print(f"{BACKENDS} backends, {sessions} sessions of {turns} turns, run at once; {where}")
    print(
        "| routing | prefix-cache hits | backends' TTFT ms, mean / p99 | sessions' TTFT ms, mean / p99 | requests per URL | busiest / mean |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="parsegate-affinity-") as folder:
        for mode in options.modes.split(","):
            print(asyncio.run(_run(mode, sessions, turns, Path(folder), gateway_core)), flush=True)


if __name__ == "__main__":
    main()
