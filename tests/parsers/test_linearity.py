"""Guard against quadratic parsing, for every registered format.

Streamed in 4-character chunks, 64 KB must cost less than 16x what 8 KB
costs: a linear parser costs 8x, a parser that re-reads its buffer on every
chunk about 64x. CPU time of this process, the best of interleaved runs,
so that other load on the machine does not count (tests/cpu_cost.py).
bench/parser_bench.py prints the figures."""

from __future__ import annotations

import pytest

from bench.workloads import (
    distinct_reasoning_parsers,
    distinct_tool_parsers,
    long_argument_call,
    reasoning_output,
    reasoning_pipeline,
    streamed_cpu_seconds,
    tool_pipeline,
)
from tests.cpu_cost import least_costs

pytestmark = pytest.mark.bench

BOUND = 16


def _costs(make, text_of) -> tuple[float, float]:
    small_text, large_text = text_of(8), text_of(64)
    return least_costs(
        lambda: streamed_cpu_seconds(make(), small_text)[0],
        lambda: streamed_cpu_seconds(make(), large_text)[0],
        BOUND,
    )


@pytest.mark.parametrize("parser", distinct_tool_parsers())
def test_a_long_argument_streams_in_linear_time(parser):
    small, large = _costs(lambda: tool_pipeline(parser), lambda kb: long_argument_call(parser, kb))
    assert large < BOUND * small, f"8 KB: {small:.4f}s, 64 KB: {large:.4f}s"


@pytest.mark.parametrize("stream_reasoning", [True, False], ids=["streamed", "in-one-piece"])
@pytest.mark.parametrize("parser", distinct_reasoning_parsers())
def test_long_reasoning_streams_in_linear_time(parser, stream_reasoning):
    small, large = _costs(lambda: reasoning_pipeline(parser, stream_reasoning), lambda kb: reasoning_output(parser, kb))
    assert large < BOUND * small, f"8 KB: {small:.4f}s, 64 KB: {large:.4f}s"
