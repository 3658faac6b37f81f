"""Several backend URLs for one model: requests go round-robin, and a URL
that keeps failing is skipped for a cool-down (a simple circuit breaker).

After `threshold` failures in a row a URL is skipped for `cooldown`
seconds; then it gets requests again, and one more failure skips it again.
If every URL is being skipped, the one that has rested longest is tried
rather than failing without an attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Endpoint:
    url: str
    failures: int = 0
    skipped_until: float = 0.0


class Balancer:
    def __init__(
        self, urls: list[str], threshold: int, cooldown: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.endpoints = [Endpoint(url) for url in urls]
        self._threshold = threshold
        self._cooldown = cooldown
        self._clock = clock
        self._next = 0

    def pick(self) -> Endpoint:
        """The next URL in turn that is not being skipped."""
        now = self._clock()
        count = len(self.endpoints)
        for step in range(count):
            endpoint = self.endpoints[(self._next + step) % count]
            if endpoint.skipped_until <= now:
                self._next = (self._next + step + 1) % count
                return endpoint
        return min(self.endpoints, key=lambda endpoint: endpoint.skipped_until)

    def succeeded(self, endpoint: Endpoint) -> None:
        endpoint.failures = 0

    def failed(self, endpoint: Endpoint) -> None:
        endpoint.failures += 1
        if endpoint.failures >= self._threshold:
            endpoint.skipped_until = self._clock() + self._cooldown
            endpoint.failures = self._threshold - 1
