"""Prometheus metrics, served at `GET /metrics` in the text format.

Each app has its own registry, so several gateways in one process (tests)
never share counts. Label values are model names, parser names, HTTP statuses,
the app's route paths and the fixed error kinds below: a path that is no route
(a client's typo) counts as `route="other"`. A model name a client writes becomes a label
only under a catch-all entry, and only the first `MAX_ROUTED_MODELS` such
names do: the rest share the label `other`, so the series stay bounded.

The histograms of streamed chunks are `LoopHistogram`s, cheap enough to
observe per chunk:

prometheus_client's `Histogram` takes a lock and bumps two lock-guarded
values per observation (its sum and one bucket): about 2.7 µs, the largest
single cost a paced chunk had in the gateway's own code (docs/benchmarks.md,
"Server side"). Every streamed-chunk observation is made on the event
loop's thread, and so is a scrape (`GET /metrics` is served there too), so
plain numbers do: an observation is one bisect and two additions. The
series are exposed through prometheus_client's custom-collector interface
(https://prometheus.github.io/client_python/collector/custom/), in the
same text format as a `Histogram` of the same name, buckets and labels.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import accumulate

from fastapi import Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

UNKNOWN_MODEL = "unknown"  # the label of requests that named no configured model
OTHER_MODELS = "other"  # the label of catch-all models past the first MAX_ROUTED_MODELS
OTHER_ROUTE = "other"  # the `route` label of a path that is none of the app's routes
MAX_ROUTED_MODELS = 100
UPSTREAM_ERROR_KINDS = (
    "unreachable",  # connection refused or failed before a response
    "timeout",  # the backend did not answer in time
    "invalid_response",  # a non-streamed answer that is not a chat completion
    "backend_4xx",  # the backend answered with a client error
    "backend_5xx",  # the backend answered with a server error
    "stream_error",  # the backend sent an error event mid-stream
    "stream_cut",  # the stream ended before every choice finished
    "malformed_chunk",  # a stream chunk that is not JSON
    "connection_lost",  # the connection failed mid-stream
)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
_CHUNK_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """The gateway's metric families, in a registry of their own."""

    def __init__(self) -> None:
        self._declared: set[str] = set()
        self._routed: set[str] = set()
        self._routes: frozenset[str] = frozenset()
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "parsegate_requests",
            "HTTP requests, by model, HTTP status and route.",
            ["model", "status", "route"],
            registry=registry,
        )
        self.time_to_first_token = Histogram(
            "parsegate_time_to_first_token_seconds",
            "Streamed requests: from the request's arrival to the backend's first chunk of text.",
            ["model"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.inter_chunk_latency = LoopHistogram(  # observed per chunk: the cheap kind
            "parsegate_inter_chunk_latency_seconds",
            "Streamed requests: time between consecutive backend chunks of text.",
            ["model"],
            buckets=_CHUNK_BUCKETS,
            registry=registry,
        )
        self.overhead = LoopHistogram(
            "parsegate_overhead_seconds",
            "Time spent in parsegate for a request: its wall time less the time it awaited the backend "
            "(docs/operations.md#metrics).",
            ["model"],
            buckets=_OVERHEAD_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "parsegate_tokens",
            "Tokens the backend reported in `usage`, by kind (prompt, completion).",
            ["model", "kind"],
            registry=registry,
        )
        self.upstream_errors = Counter(
            "parsegate_upstream_errors",
            "Backend failures, by kind.",
            ["model", "kind"],
            registry=registry,
        )
        self.streams_cut = Counter(
            "parsegate_streams_cut",
            "Streams the gateway cut short of their end, by reason (client_stalled).",
            ["model", "reason"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "parsegate_tool_calls",
            "Tool calls parsed.",
            ["model", "parser"],
            registry=registry,
        )
        self.tool_call_fallbacks = Counter(
            "parsegate_tool_call_fallbacks",
            "Text that began with a tool-call marker but held no call, returned as content.",
            ["model", "parser"],
            registry=registry,
        )
        self.invalid_arguments = Counter(
            "parsegate_tool_call_invalid_arguments",
            "Tool calls whose arguments were not valid JSON when the call ended.",
            ["model", "parser"],
            registry=registry,
        )

        self.rate_limited = Counter(
            "parsegate_rate_limited",
            "Requests refused by a per-key limit, by the key's name and the limit (requests, tokens, streams).",
            ["key", "limit"],
            registry=registry,
        )

    def declare_models(self, names: list[str]) -> None:
        """Start every model's upstream-error series at zero, so a dashboard
        sees them before the first failure."""
        self._declared.update(names)
        for name in names:
            for kind in UPSTREAM_ERROR_KINDS:
                self.upstream_errors.labels(name, kind)

    def declare_routes(self, paths: list[str]) -> None:
        """The app's route paths: the values the `route` label may take."""
        self._routes = frozenset(paths)

    def route_label(self, path: str) -> str:
        return path if path in self._routes else OTHER_ROUTE

    def model_label(self, model: str) -> str:
        """The `model` label of a request served as `model`: its own name if
        configured or among the first `MAX_ROUTED_MODELS` a catch-all served,
        else `other`."""
        if model in self._declared or model in self._routed:
            return model
        if len(self._routed) < MAX_ROUTED_MODELS:
            self._routed.add(model)
            return model
        return OTHER_MODELS

    async def endpoint(self, request: Request) -> Response:
        """`GET /metrics`."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class LoopSeries:
    """One label set's buckets: `counts[i]` observations of at most
    `bounds[i]` and above the bound before it, the last one above all."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self._bounds, value)] += 1
        self.sum += value


class LoopHistogram(Collector):
    """A histogram observed only from the event loop's thread."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = list(labelnames)
        self._bounds = tuple(sorted(buckets))
        self._series: dict[tuple[str, ...], LoopSeries] = {}
        registry.register(self)

    def labels(self, *values: str) -> LoopSeries:
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self._labelnames):
                raise ValueError(f"{self._name} takes the labels {self._labelnames}")
            series = self._series[values] = LoopSeries(self._bounds)
        return series

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        edges = [*map(floatToGoString, self._bounds), "+Inf"]
        for values, series in list(self._series.items()):
            buckets = list(zip(edges, accumulate(series.counts), strict=True))
            family.add_metric(list(values), buckets, series.sum)
        yield family
