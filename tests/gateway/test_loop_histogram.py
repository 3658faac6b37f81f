"""The per-chunk histogram reads, on /metrics, exactly as prometheus_client's
own `Histogram` of the same name, labels and buckets would."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from gateway.ops.metrics import LoopHistogram

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# on a bound, between bounds, below the first, above the last, twice the same
OBSERVED = {"a": [0.0005, 0.0007, 0.02, 0.02, 7.5, 0.0], "b": [1.0, 2.4999, 5.0, 5.0001]}


def _exposition(kind: type) -> list[str]:
    registry = CollectorRegistry()
    histogram = kind("gaps_seconds", "Gaps.", ["model"], buckets=BUCKETS, registry=registry)
    for model, values in OBSERVED.items():
        series = histogram.labels(model)
        for value in values:
            series.observe(value)
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]  # a built-in's creation time


def test_same_text_as_prometheus_client_histogram() -> None:
    ours = _exposition(LoopHistogram)
    assert ours == _exposition(Histogram)
    assert 'gaps_seconds_bucket{le="0.0005",model="a"} 2.0' in ours
    assert 'gaps_seconds_bucket{le="+Inf",model="b"} 4.0' in ours


def test_labels_must_match_the_label_names() -> None:
    histogram = LoopHistogram("gaps_seconds", "Gaps.", ["model"], buckets=BUCKETS, registry=CollectorRegistry())
    with pytest.raises(ValueError, match="model"):
        histogram.labels("a", "b")
