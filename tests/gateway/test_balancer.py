"""The circuit breaker's timing, with a clock the test moves."""

from __future__ import annotations

from gateway.upstream.balancer import Balancer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def picks(balancer: Balancer, count: int) -> list[str]:
    return [balancer.pick().url for _ in range(count)]


def test_round_robin_over_healthy_urls():
    assert picks(Balancer(["a", "b", "c"], threshold=2, cooldown=10), 5) == ["a", "b", "c", "a", "b"]


def test_a_url_failing_in_a_row_rests_for_the_cooldown_then_returns():
    clock = Clock()
    balancer = Balancer(["a", "b"], threshold=2, cooldown=10, clock=clock)
    a = balancer.endpoints[0]
    balancer.failed(a)
    assert picks(balancer, 2) == ["a", "b"]  # one failure is not enough
    balancer.failed(a)
    assert picks(balancer, 3) == ["b", "b", "b"]
    clock.now = 10
    assert picks(balancer, 2) == ["a", "b"]
    balancer.failed(a)  # one more failure after the rest skips it again
    assert picks(balancer, 2) == ["b", "b"]


def test_a_success_resets_the_count():
    balancer = Balancer(["a", "b"], threshold=2, cooldown=10, clock=Clock())
    a = balancer.endpoints[0]
    balancer.failed(a)
    balancer.succeeded(a)
    balancer.failed(a)
    assert picks(balancer, 2) == ["a", "b"]


def test_when_every_url_rests_the_longest_rested_is_tried():
    clock = Clock()
    balancer = Balancer(["a", "b"], threshold=1, cooldown=10, clock=clock)
    balancer.failed(balancer.endpoints[0])
    clock.now = 1
    balancer.failed(balancer.endpoints[1])
    assert picks(balancer, 2) == ["a", "a"]
