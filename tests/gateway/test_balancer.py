"""The circuit breaker's timing, with a clock the test moves."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from gateway.upstream.balancer import Balancer, rendezvous_rank


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


# Session routing: rendezvous hashing over the healthy URLs, in-flight counts for the rest.

URLS = [f"http://gpu-{index}:8000/v1" for index in range(5)]
SESSIONS = st.lists(st.text(min_size=1, max_size=12), min_size=20, max_size=60, unique=True)


def session_balancer(urls: list[str], clock: Clock | None = None, **options: object) -> Balancer:
    return Balancer(urls, threshold=1, cooldown=10, clock=clock or Clock(), routing="session", **options)


def homes(balancer: Balancer, sessions: list[str]) -> dict[str, str]:
    return {session: balancer.pick(session).url for session in sessions}


def test_a_sessions_turns_land_on_one_url():
    balancer = session_balancer(URLS)
    assert len({balancer.pick("agent-7").url for _ in range(20)}) == 1


@given(sessions=SESSIONS, removed=st.sampled_from(URLS))
def test_removing_a_url_moves_only_its_own_sessions(sessions, removed):
    before = homes(session_balancer(URLS), sessions)
    after = homes(session_balancer([url for url in URLS if url != removed]), sessions)
    assert {session for session in sessions if before[session] != after[session]} == {
        session for session in sessions if before[session] == removed
    }


@given(sessions=SESSIONS)
def test_adding_a_url_moves_sessions_only_onto_it(sessions):
    before = homes(session_balancer(URLS[:4]), sessions)
    after = homes(session_balancer(URLS), sessions)
    assert all(after[session] in (before[session], URLS[4]) for session in sessions)


def test_sessions_spread_over_every_url():
    counts = Counter(homes(session_balancer(URLS[:4]), [f"session-{index}" for index in range(400)]).values())
    assert set(counts) == set(URLS[:4]) and min(counts.values()) > 60


def test_a_resting_urls_sessions_move_and_come_back():
    clock = Clock()
    balancer = session_balancer(URLS[:3], clock)
    sessions = [f"session-{index}" for index in range(30)]
    before = homes(balancer, sessions)
    broken = balancer.endpoints[0]
    balancer.failed(broken)
    during = homes(balancer, sessions)
    assert broken.url not in during.values()
    assert all(during[session] == before[session] for session in sessions if before[session] != broken.url)
    clock.now = 10
    assert homes(balancer, sessions) == before


def test_requests_without_a_key_go_to_the_url_with_fewest_in_flight():
    balancer = session_balancer(URLS[:3])
    a, b, c = balancer.endpoints
    balancer.began(a)
    balancer.began(a)
    balancer.began(c)
    assert balancer.pick() is b
    balancer.began(b)
    balancer.began(b)
    assert balancer.pick() is c
    balancer.ended(a)
    balancer.ended(a)
    assert picks(balancer, 1) == [a.url]


def test_an_overloaded_sessions_url_is_passed_over_until_it_drains():
    balancer = session_balancer(URLS[:4], overload=1.5, overload_floor=4)
    home = balancer.pick("agent-1")
    for _ in range(4):
        balancer.began(home)
    other = next(endpoint for endpoint in balancer.endpoints if endpoint is not home)
    balancer.began(other)  # mean 1.25: 4 in flight is past 1.5 times it
    assert balancer.pick("agent-1") is not home
    balancer.ended(home)  # 3 in flight: under the floor
    assert balancer.pick("agent-1") is home


def test_an_overloaded_sessions_turns_spill_to_its_next_url_not_the_least_loaded():
    balancer = session_balancer(URLS[:4], overload=1.5, overload_floor=4)
    ranked = sorted(balancer.endpoints, key=lambda endpoint: rendezvous_rank("agent-1", endpoint), reverse=True)
    home, second, *rest = ranked
    home.in_flight, second.in_flight = 8, 2  # mean 2.5: home is past 1.5 times it, the second is not
    rest[0].in_flight = rest[1].in_flight = 0
    assert [balancer.pick("agent-1") for _ in range(3)] == [second] * 3
    second.in_flight = 5  # past the bound too (mean 3.25): the third in rank
    assert balancer.pick("agent-1") is rest[0]


def test_without_an_overload_bound_a_session_stays_home():
    balancer = session_balancer(URLS[:2])
    home = balancer.pick("agent-1")
    for _ in range(50):
        balancer.began(home)
    assert balancer.pick("agent-1") is home


def test_a_retry_goes_to_a_url_not_yet_tried():
    balancer = session_balancer(URLS[:3])
    home = balancer.pick("agent-1")
    second = balancer.pick("agent-1", [home])
    third = balancer.pick("agent-1", [home, second])
    assert len({home.url, second.url, third.url}) == 3
    assert balancer.pick("agent-1", [home, second, third]) is home  # all tried: start over
