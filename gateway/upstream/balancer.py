"""Several backend URLs for one model: which URL serves a request, and a
circuit breaker that skips a URL that keeps failing.

Routing (docs/operations.md, "Several URLs"):

- a request with a session key goes to the URL that ranks first for that
  key by rendezvous (highest-random-weight) hashing over the URLs that are
  not resting, so a session's turns land where its prefix is cached, and
  adding or removing a URL moves only that URL's share of sessions;
- a session whose URL is overloaded (a load of at least `overload_floor`
  and more than `overload` times the mean over the healthy URLs: the
  relative bound of SGLang's router,
  https://docs.sglang.ai/advanced_features/router.html, "cache-aware") goes
  to the next URL of its ranking that is not, as consistent hashing with
  bounded loads does (https://arxiv.org/abs/1608.01350; HAProxy's
  `hash-balance-factor`), so that it keeps landing where its spilled turns
  left their prefix;
- a request without a key goes to the least loaded URL, ties taken in turn.
  A URL's load is its requests in flight from this process;
- with `backend.load_gauges`, a URL's load is the larger of its requests in
  flight and the requests its engine says it holds (running and queued, by
  anyone: other replicas' traffic counts too), plus a weight times its KV
  cache's fill (load_gauges.py);
- a continuation of a stored response goes first to the URL that served
  that response (`Route.prefer`), while it is healthy and not overloaded;
- `round_robin` takes the URLs in turn, whatever the request.

After `threshold` failures in a row a URL is skipped for `cooldown`
seconds; then it gets requests again (and its sessions come back), and one
more failure skips it again. If every URL is being skipped, the one that
has rested longest is tried rather than failing without an attempt. A retry
avoids the URLs its request has already tried while others are left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Literal

Routing = Literal["session", "round_robin"]


@dataclass(eq=False)
class Endpoint:
    url: str
    failures: int = 0
    skipped_until: float = 0.0
    in_flight: int = 0
    engine_requests: float = 0.0  # requests its engine holds, by its gauges (load_gauges.py); 0 when not scraped
    cache_load: float = 0.0  # load its KV cache's fill adds (load_gauges.py)
    hashed_url: bytes = field(init=False)  # what a session's key is hashed with

    def __post_init__(self) -> None:
        self.hashed_url = b"\0" + self.url.encode()

    @property
    def load(self) -> float:
        return max(self.in_flight, self.engine_requests) + self.cache_load


@dataclass(slots=True)
class Route:
    """Where one request goes: its session's key, the URL it would rather
    have (the one that served the stored response it continues), and, once
    answered, the URL that served it."""

    session: str | None = None
    prefer: str | None = None
    served_by: str | None = None


def rendezvous_rank(session: str, endpoint: Endpoint) -> int:
    """The weight of `endpoint` for `session`: the highest serves it."""
    digest = blake2b(session.encode(), digest_size=8)
    digest.update(endpoint.hashed_url)
    return int.from_bytes(digest.digest(), "big")


class Balancer:
    def __init__(
        self,
        urls: list[str],
        threshold: int,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        routing: Routing = "round_robin",
        overload: float | None = None,
        overload_floor: int = 1,
    ) -> None:
        self.endpoints = [Endpoint(url) for url in urls]
        self.several = len(self.endpoints) > 1
        self._threshold = threshold
        self._cooldown = cooldown
        self.clock = clock  # a test may set its own
        self._routing = routing
        self._overload = overload
        self._overload_floor = overload_floor
        self._next = 0

    def pick(self, session: str | None = None, tried: Collection[Endpoint] = (), prefer: str | None = None) -> Endpoint:
        """The URL for a request with `session` (its key, or None) that
        would rather have `prefer` and has already tried `tried`."""
        if not self.several:
            return self.endpoints[0]
        now = self.clock()
        healthy = [endpoint for endpoint in self.endpoints if endpoint.skipped_until <= now]
        if not healthy:
            return min(self.endpoints, key=lambda endpoint: endpoint.skipped_until)
        untried = [endpoint for endpoint in healthy if endpoint not in tried] or healthy
        if self._routing == "round_robin":
            return self._in_turn(untried, lambda endpoint: 0)
        if prefer is not None:
            preferred = next((endpoint for endpoint in untried if endpoint.url == prefer), None)
            if preferred is not None and not self._overloaded(preferred, healthy):
                return preferred
        if session is not None:
            ranked = sorted(untried, key=lambda endpoint: rendezvous_rank(session, endpoint), reverse=True)
            return next((endpoint for endpoint in ranked if not self._overloaded(endpoint, healthy)), ranked[0])
        return self._in_turn(untried, lambda endpoint: endpoint.load)

    def _overloaded(self, endpoint: Endpoint, healthy: list[Endpoint]) -> bool:
        load = endpoint.load
        if self._overload is None or load < self._overload_floor:
            return False
        mean = sum(other.load for other in healthy) / len(healthy)
        return load > self._overload * mean

    def _in_turn(self, candidates: list[Endpoint], load: Callable[[Endpoint], float]) -> Endpoint:
        """The least loaded of `candidates`, the first in turn among equals."""
        count = len(self.endpoints)
        order = {id(endpoint): (index - self._next) % count for index, endpoint in enumerate(self.endpoints)}
        chosen = min(candidates, key=lambda endpoint: (load(endpoint), order[id(endpoint)]))
        self._next = (self.endpoints.index(chosen) + 1) % count
        return chosen

    def began(self, endpoint: Endpoint) -> None:
        """A request went to `endpoint` (and is in flight until `ended`)."""
        endpoint.in_flight += 1

    def ended(self, endpoint: Endpoint) -> None:
        endpoint.in_flight -= 1

    def succeeded(self, endpoint: Endpoint) -> None:
        endpoint.failures = 0

    def failed(self, endpoint: Endpoint) -> None:
        endpoint.failures += 1
        if endpoint.failures >= self._threshold:
            endpoint.skipped_until = self.clock() + self._cooldown
            endpoint.failures = self._threshold - 1
