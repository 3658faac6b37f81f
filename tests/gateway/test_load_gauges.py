"""Routing weighted by the engines' own load gauges (backend.load_gauges,
docs/operations.md "Load gauges"): three fake engines serve vLLM's, SGLang's
or llama.cpp's gauges on their /metrics, and keyless requests and
overloaded sessions go where the engines are least loaded."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.backend_config import LoadGauges
from gateway.ops.config import Config
from gateway.ops.secrets import Secrets
from gateway.upstream.backends import open_backend
from gateway.upstream.balancer import Balancer
from gateway.upstream.load_gauges import EngineLoad, engine_load
from tests.fake_backend import FakeBackend


def vllm(waiting: float, cache: float, engines: int = 1, running: float = 0) -> str:
    lines = ["# TYPE vllm:num_requests_waiting gauge"]
    lines += [f'vllm:num_requests_waiting{{engine="{rank}",model_name="q"}} {waiting}' for rank in range(engines)]
    lines += [f'vllm:num_requests_running{{engine="{rank}",model_name="q"}} {running}' for rank in range(engines)]
    lines += ["# TYPE vllm:kv_cache_usage_perc gauge"]
    lines += [f'vllm:kv_cache_usage_perc{{engine="{rank}",model_name="q"}} {cache}' for rank in range(engines)]
    lines += ['vllm:request_success_total{finished_reason="stop",model_name="q"} 12.0']
    return "\n".join(lines) + "\n"


SGLANG = (
    "# HELP sglang:num_queue_reqs The number of requests in the waiting queue\n"
    "# TYPE sglang:num_queue_reqs gauge\n"
    'sglang:num_queue_reqs{model_name="q"} 4.0\n'
    "# TYPE sglang:token_usage gauge\n"
    'sglang:token_usage{model_name="q"} 0.5\n'
    'sglang:num_running_reqs{model_name="q"} 8.0\n'
)
LLAMACPP = (
    "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n"
    "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 1\n"
    "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.63\n"
)


@pytest.mark.parametrize(
    ("text", "load"),
    [
        (vllm(3, 0.25, running=2), EngineLoad(5.0, 0.25)),
        (vllm(3, 0.25, engines=2), EngineLoad(6.0, 0.25)),  # data-parallel ranks: summed
        (SGLANG, EngineLoad(12.0, 0.5)),
        (LLAMACPP, EngineLoad(3.0, 0.63)),
        ("# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.9\n", EngineLoad(0.0, 0.9)),
    ],
)
def test_each_servers_gauges_are_read(text, load):
    assert engine_load(text.encode()) == load


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# TYPE other gauge\nother 3\n",  # none of the gauges
        "vllm:num_requests_waiting{engine=0} many\n",  # not the text format
    ],
)
def test_text_without_readable_gauges_is_no_load(text):
    assert engine_load(text.encode()) is None


@given(st.binary(max_size=300))
def test_any_bytes_read_as_a_load_or_none(text):
    load = engine_load(b"vllm:num_requests_waiting " + text)
    assert load is None or (load.requests >= 0 and 0 <= load.cache_used <= 1)


def test_the_gauges_weigh_the_least_loaded_choice_and_the_overload_bound():
    balancer = Balancer(["a", "b", "c"], threshold=3, cooldown=10, routing="session", overload=1.5, overload_floor=4)
    a, b, c = balancer.endpoints
    a.in_flight, b.in_flight, c.in_flight = 1, 2, 3
    assert balancer.pick().url == "a"
    a.engine_requests = 1  # its engine holds this process's one request: no more load
    assert balancer.pick().url == "a"
    a.engine_requests = 4  # others' requests too
    assert balancer.pick().url == "b"
    b.cache_load = LoadGauges().cache_weight * 1.0  # a full KV cache: 2 + 2
    assert balancer.pick().url == "c"
    home = balancer.pick("some session")
    home.engine_requests = 20
    assert balancer.pick("some session") is not home  # its engine's queue makes it overloaded


@pytest.fixture(scope="module")
def engines(serve) -> list[tuple[FakeBackend, str]]:
    made = [FakeBackend() for _ in range(3)]
    return [(engine, serve(engine.app)) for engine in made]


@pytest.fixture
def fakes(engines) -> list[FakeBackend]:
    for engine, _ in engines:
        engine.reset()
        engine.metrics_asked.clear()
    return [engine for engine, _ in engines]


def gateway(serve, engines, gauges: dict | None, **settings: object) -> httpx.Client:
    """A client of a gateway over the three engines; the gauges are scraped
    at its first request and (with the hour's interval) not again in a test."""
    backend: dict = {"urls": [f"{url}/v1" for _, url in engines], **settings}
    if gauges is not None:
        backend["load_gauges"] = gauges
    app = create_app(Config.model_validate({"models": [{"name": "pool", "backend": backend}]}))
    return httpx.Client(base_url=serve(app), timeout=10)


def served_by(fakes: list[FakeBackend]) -> list[int]:
    return [len(fake.requests) for fake in fakes]


def keyless_requests(client: httpx.Client, count: int) -> None:
    """Text completions, which carry no session key."""
    for turn in range(count):
        response = client.post("/v1/completions", json={"model": "pool", "prompt": f"question {turn}"})
        assert response.status_code == 200, response.text


@pytest.fixture
def busy_first_two(fakes) -> list[FakeBackend]:
    """vLLM, SGLang and llama.cpp engines: the first two with requests queued, the third idle."""
    fakes[0].metrics = vllm(waiting=5, cache=0.9)
    fakes[1].metrics = SGLANG
    fakes[2].metrics = LLAMACPP.replace(" 2\n", " 0\n").replace(" 1\n", " 0\n").replace("0.63", "0.1")
    return fakes


def test_requests_go_to_the_engine_its_gauges_say_is_least_loaded(serve, engines, busy_first_two):
    with gateway(serve, engines, {"interval": 3600}) as client:
        keyless_requests(client, 6)  # one at a time: no URL has any in flight
    assert served_by(busy_first_two) == [0, 0, 6]
    assert [len(fake.metrics_asked) for fake in busy_first_two] == [1, 1, 1]


def test_without_load_gauges_no_metrics_are_scraped(serve, engines, busy_first_two):
    with gateway(serve, engines, None) as client:
        keyless_requests(client, 6)
    assert served_by(busy_first_two) == [2, 2, 2]
    assert [len(fake.metrics_asked) for fake in busy_first_two] == [0, 0, 0]


def test_an_engine_without_metrics_counts_its_requests_in_flight_alone(serve, engines, fakes):
    fakes[0].metrics = vllm(waiting=5, cache=0.0)
    fakes[1].metrics = "# no gauges here\n"
    fakes[2].metrics = vllm(waiting=0, cache=0.0)
    with gateway(serve, engines, {"interval": 3600}) as client:
        keyless_requests(client, 4)
    assert served_by(fakes) == [0, 2, 2]


@pytest.mark.parametrize(("overload", "moves"), [({}, True), ({"session_overload": "never"}, False)])
def test_a_session_leaves_a_url_whose_engine_is_overloaded_unless_told_never(serve, engines, fakes, overload, moves):
    for fake in fakes:
        fake.metrics = vllm(waiting=0, cache=0.0)
    headers = {"x-claude-code-session-id": "agent-7"}
    body = {"model": "pool", "messages": [{"role": "user", "content": "step"}]}
    with gateway(serve, engines, {"interval": 3600}, **overload) as client:
        assert client.post("/v1/chat/completions", json=body, headers=headers).status_code == 200
        home = served_by(fakes).index(1)
    fakes[home].requests.clear()
    fakes[home].metrics = vllm(waiting=30, cache=1.0)  # the engine's queue, from other replicas' traffic
    with gateway(serve, engines, {"interval": 3600}, **overload) as client:  # a fresh gateway scrapes it so
        assert client.post("/v1/chat/completions", json=body, headers=headers).status_code == 200
    assert len(fakes[home].requests) == (0 if moves else 1)


def test_load_gauges_settings_are_checked():
    with pytest.raises(ValueError, match="interval"):
        Config.model_validate(
            {
                "models": [
                    {
                        "name": "pool",
                        "backend": {"urls": ["http://a/v1", "http://b/v1"], "load_gauges": {"interval": 0}},
                    }
                ]
            }
        )


def test_each_scrape_reads_the_gauges_anew(engines, fakes):
    """What the interval's task does each time: an engine whose queue grows
    weighs more, and one whose gauges go away weighs nothing again."""
    models = [{"name": "pool", "backend": {"urls": [f"{url}/v1" for _, url in engines], "load_gauges": {}}}]
    config = Config.model_validate({"models": models})
    for fake in fakes:
        fake.metrics = vllm(waiting=1, cache=0.5)

    async def scrapes() -> list[list[float]]:
        backend = open_backend(config.models[0], Secrets.of(config))
        assert backend.load_scraper is not None
        try:
            await backend.load_scraper.start()
            seen = [[endpoint.load for endpoint in backend.balancer.endpoints]]
            fakes[0].metrics = vllm(waiting=9, cache=0.5)
            fakes[1].metrics = "# gone\n"
            await backend.load_scraper.refresh()
            seen.append([endpoint.load for endpoint in backend.balancer.endpoints])
            return seen
        finally:
            await backend.close()

    assert asyncio.run(scrapes()) == [[2.0, 2.0, 2.0], [10.0, 0.0, 2.0]]  # requests + 2 x cache


def test_a_single_url_is_never_scraped():
    config = Config.model_validate({"models": [{"name": "one", "backend": {"url": "http://a/v1", "load_gauges": {}}}]})
    assert open_backend(config.models[0], Secrets.of(config)).load_scraper is None
