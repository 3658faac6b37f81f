"""Telling linear from quadratic cost on a loaded machine.

A test runs the same work at two sizes and compares what they cost, not
how long either took: 8 times the input costs about 8 times as much when
the work is linear, about 64 times when it is quadratic. Each cost is CPU
time (other jobs on the machine do not count) and the least of runs
interleaved with the other size's, so that one run slowed by the machine
does not decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def thread_cpu_seconds(work: Callable[[], object]) -> float:
    """The CPU time this thread spends in `work()` (other threads of the
    test session, such as the servers of its fixtures, do not count)."""
    started = time.thread_time()
    work()
    return time.thread_time() - started


def least_costs(
    small: Callable[[], float], large: Callable[[], float], bound: float, runs: int = 3, max_runs: int = 12
) -> tuple[float, float]:
    """The least of what `small()` and `large()` report, run in turns:
    `runs` times each, and more (up to `max_runs`) while the large one
    still costs `bound` times the small one or more."""
    smalls: list[float] = []
    larges: list[float] = []
    while len(smalls) < runs or (min(larges) >= bound * min(smalls) and len(smalls) < max_runs):
        smalls.append(small())
        larges.append(large())
    return min(smalls), min(larges)
