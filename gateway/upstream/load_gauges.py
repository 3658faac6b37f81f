"""The engines' own load gauges behind `backend.load_gauges`
(docs/operations.md, "Load gauges"): each URL's `/metrics` is scraped every
`interval` seconds into its endpoint (balancer.py), whose load is then the
larger of its requests in flight from this process and the requests its
engine holds (running and queued, from anyone: other gateway replicas,
clients sent to it directly), plus `cache_weight` times its KV cache's fill.
The engine's count includes this process's own requests, so the larger of
the two, not their sum: the fresh count of this process's between scrapes,
the engine's when others load it more.

The gauges, by server (each a Prometheus gauge at the server's root
`/metrics`; data-parallel engines' series are summed, or the fullest cache
taken):

- vLLM: `vllm:num_requests_running` and `vllm:num_requests_waiting`,
  `vllm:kv_cache_usage_perc` (0 to 1; `vllm:gpu_cache_usage_perc` before
  v0.10), https://docs.vllm.ai/en/latest/design/metrics.html;
- SGLang: `sglang:num_running_reqs` and `sglang:num_queue_reqs`,
  `sglang:token_usage` (0 to 1),
  https://docs.sglang.ai/references/production_metrics.html;
- llama.cpp's server with `--metrics`: `llamacpp:requests_processing` and
  `llamacpp:requests_deferred`, `llamacpp:kv_cache_usage_ratio` (0 to 1;
  newer builds leave it out),
  https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md.

A URL whose scrape fails (or has none of the gauges) adds nothing until a
scrape comes through: its load is its requests in flight, as without
gauges. The first scrape is made by the first request that needs a URL, and
the ones after by a task of the backend's, stopped when the backend closes.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass

import anyio
from prometheus_client.parser import text_string_to_metric_families

from gateway.ops.backend_config import LoadGauges
from gateway.upstream.backend import Backend
from gateway.upstream.balancer import Endpoint
from gateway.upstream.engine_metrics import MetricsUnavailable, fetch_metrics

log = logging.getLogger("parsegate.load_gauges")

HELD = (  # requests running and queued
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
)
CACHE_USED = (
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
)
_NAMES = frozenset(name.encode() for name in (*HELD, *CACHE_USED))


@dataclass(frozen=True, slots=True)
class EngineLoad:
    requests: float  # requests running and queued in the engine, summed over its series
    cache_used: float  # the fullest KV cache's fill, 0 to 1


def engine_load(text: bytes) -> EngineLoad | None:
    """The load gauges of a Prometheus text exposition; None when it has
    none of them or they cannot be read."""
    lines = [line for line in text.splitlines() if _series(line) in _NAMES]
    if not lines:
        return None
    requests, cache_used = 0.0, 0.0
    try:
        for family in text_string_to_metric_families(b"\n".join(lines).decode("utf-8", "replace") + "\n"):
            for sample in family.samples:
                if not math.isfinite(sample.value) or sample.value < 0:
                    continue
                if sample.name in HELD:
                    requests += sample.value
                elif sample.name in CACHE_USED:
                    cache_used = max(cache_used, min(sample.value, 1.0))
    except ValueError:
        return None
    return EngineLoad(requests, cache_used)


def _series(line: bytes) -> bytes:
    return line.split(b"{", 1)[0].split(b" ", 1)[0]


class LoadScraper:
    """Scrapes the gauges of every URL of `backend` into its balancer's endpoints."""

    def __init__(self, backend: Backend, settings: LoadGauges) -> None:
        self.backend, self.settings = backend, settings
        self._started = False
        self._starting = anyio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._failing: set[str] = set()  # URLs whose last scrape failed (logged once until one comes through)

    async def start(self) -> None:
        """The first scrape of every URL, then one every `interval` seconds (once)."""
        if self._started:
            return
        async with self._starting:
            if self._started:
                return
            await self.refresh()
            self._task = asyncio.create_task(self._every_interval())
            self._started = True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def refresh(self) -> None:
        """Scrape every URL now, together."""
        await asyncio.gather(*(self._scrape(endpoint) for endpoint in self.backend.balancer.endpoints))

    async def _every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interval)
            await self.refresh()

    async def _scrape(self, endpoint: Endpoint) -> None:
        settings = self.settings
        try:
            text = await fetch_metrics(self.backend, endpoint.url, settings.timeout, settings.max_bytes)
        except MetricsUnavailable as failure:
            self._failed(endpoint, str(failure))
            return
        load = engine_load(text)
        if load is None:
            self._failed(endpoint, "served none of the load gauges")
            return
        endpoint.engine_requests = load.requests
        endpoint.cache_load = settings.cache_weight * load.cache_used
        if endpoint.url in self._failing:
            self._failing.discard(endpoint.url)
            log.warning("load gauges of %s come through again", self.backend.redact(endpoint.url))

    def _failed(self, endpoint: Endpoint, why: str) -> None:
        endpoint.engine_requests = endpoint.cache_load = 0.0
        if endpoint.url not in self._failing:
            self._failing.add(endpoint.url)
            log.warning(
                "the engine at %s %s; its load is its requests in flight", self.backend.redact(endpoint.url), why
            )
