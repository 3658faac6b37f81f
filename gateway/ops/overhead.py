"""parsegate's own time in a request (`parsegate_overhead_seconds`, and the
opt-in `X-Parsegate-Overhead-Ms` header): the request's wall time, from its
arrival to its response's end, less the time it spent awaiting its backend.

Awaiting the backend is, measured on the event loop's clock
(`time.perf_counter`):
- from the first attempt's send to the response's headers (retries, their
  pauses and the error bodies read between them included);
- while the body streams: the body's whole run, less the time spent in
  the request's own `deliver` (parsing the pieces and writing to the
  client). A write a slow client holds back is part of the body's run, so
  waiting for a slow client is not counted as parsegate's time either.

What is left is parsegate's work for the request (reading and checking
the body, the template render, the parse, the answer's encoding), plus the
time the request waited for the event loop while other requests' work ran
on it: a busy gateway shows as a higher figure, as it should. The cost of
measuring is two clock reads per backend call and two per delivered piece
(upstream/body_push.py, around each delivery: not per chunk, since it delivers what a turn of the loop received as
one piece), next to the tens of microseconds a piece costs to parse.

LiteLLM's `x-litellm-overhead-duration-ms` header is the same figure,
defined the same way: "total response time minus the LLM API call time"
(https://docs.litellm.ai/docs/troubleshoot/latency_overhead).
"""

from __future__ import annotations

import time
from contextvars import ContextVar

OVERHEAD_HEADER = "x-parsegate-overhead-ms"


class BackendWait:
    """The seconds one request has spent awaiting its backend."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


backend_wait: ContextVar[BackendWait | None] = ContextVar("parsegate_backend_wait", default=None)


class _Awaiting:
    """The block of `awaiting_backend`: a class, not a generator's context
    manager, which costs several times as much, twice per request."""

    __slots__ = ("_wait", "_started")

    def __init__(self, wait: BackendWait | None) -> None:
        self._wait = wait
        self._started = 0.0

    def __enter__(self) -> BackendWait | None:
        if self._wait is not None:
            self._started = time.perf_counter()
        return self._wait

    def __exit__(self, *exception: object) -> None:
        if self._wait is not None:
            self._wait.seconds += time.perf_counter() - self._started


def awaiting_backend() -> _Awaiting:
    """Count the block's time as the current request's wait for its backend
    (nothing outside a request: start-up questions to a backend)."""
    return _Awaiting(backend_wait.get())
