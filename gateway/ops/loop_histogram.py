"""A Prometheus histogram cheap enough to observe per streamed chunk.

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

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


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
