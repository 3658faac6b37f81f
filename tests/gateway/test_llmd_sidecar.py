"""parsegate as the pod's target port in an llm-d InferencePool
(docs/llm-d.md): the endpoint picker scrapes the pod's port and sees the
engine's gauges; llm-d's routing headers reach the engine and its session
token comes back; every stream's usage is asked of the engine."""

from __future__ import annotations

import httpx
import orjson
import pydantic
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.app import create_app
from gateway.ops.config import Config, load_config
from tests.fake_backend import BACKEND_KEY, USAGE
from tests.sdk_clients import anthropic_client, openai_client

ASK = [{"role": "user", "content": "Hi"}]
LLMD_HEADERS = {
    "x-prefiller-host-port": "10.0.0.7:8000",
    "x-encoder-hosts-ports": "10.0.0.8:8000,10.0.0.9:8000",
    "x-data-parallel-rank": "1",
    "x-kv-cache-source-host-port": "10.0.0.5:8000",
}


def sidecar_gateway(serve, engine_url: str, **sidecar: object) -> str:
    config = {
        "server": {"sidecar": sidecar},
        "models": [{"name": "*", "backend": {"url": f"{engine_url}/v1", "api_key": BACKEND_KEY}}],
    }
    return serve(create_app(Config.model_validate(config)))


@pytest.fixture(scope="module")
def merging(serve, fake_backend_server) -> str:
    return sidecar_gateway(serve, fake_backend_server[1], engine_metrics="merge")


@pytest.fixture(scope="module")
def on_a_path(serve, fake_backend_server) -> str:
    return sidecar_gateway(serve, fake_backend_server[1], engine_metrics="path", engine_metrics_path="/engine")


def picker_scrape(url: str) -> dict[str, float]:
    """What an endpoint picker reads: the text format, parsed by Prometheus'
    own parser, one value per series name and labels."""
    response = httpx.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            key = sample.name + orjson.dumps(sample.labels, option=orjson.OPT_SORT_KEYS).decode()
            assert key not in samples, f"{key} twice in one scrape"
            samples[key] = sample.value
    return samples


def test_the_picker_sees_the_engines_gauges_beside_parsegates_on_its_port(merging, fake):
    openai_client(merging).chat.completions.create(model="fake-qwen3", messages=ASK)
    samples = picker_scrape(f"{merging}/metrics")
    assert samples['vllm:num_requests_waiting{"engine":"0","model_name":"fake-qwen3"}'] == 3.0
    assert samples['vllm:kv_cache_usage_perc{"engine":"0","model_name":"fake-qwen3"}'] == 0.25
    assert samples["parsegate_engine_scrape_up{}"] == 1.0
    assert samples['parsegate_requests_total{"model":"fake-qwen3","route":"/v1/chat/completions","status":"200"}'] == 1
    assert "parsegate_requests_total{}" not in samples  # the engine's copy of a family the gateway has is left out
    assert fake.metrics_asked[-1]["authorization"] == f"Bearer {BACKEND_KEY}"


def test_an_engine_that_sends_no_metrics_leaves_parsegates_scrape_whole(serve, fake, closed_port):
    down = sidecar_gateway(serve, f"http://127.0.0.1:{closed_port}", engine_metrics="merge")
    samples = picker_scrape(f"{down}/metrics")
    assert samples["parsegate_engine_scrape_up{}"] == 0.0
    assert not [key for key in samples if key.startswith("vllm:")]


def test_metrics_past_the_size_bound_are_not_served(serve, fake, fake_backend_server):
    bounded = sidecar_gateway(serve, fake_backend_server[1], engine_metrics="merge", engine_metrics_max_bytes=64)
    samples = picker_scrape(f"{bounded}/metrics")
    assert samples["parsegate_engine_scrape_up{}"] == 0.0
    assert not [key for key in samples if key.startswith("vllm:")]


def test_the_engines_metrics_on_a_path_of_their_own(on_a_path, fake):
    engine = picker_scrape(f"{on_a_path}/engine")
    assert engine['vllm:num_requests_waiting{"engine":"0","model_name":"fake-qwen3"}'] == 3.0
    own = picker_scrape(f"{on_a_path}/metrics")
    assert not [key for key in own if key.startswith(("vllm:", "parsegate_engine_scrape_up"))]


def test_an_engine_down_on_its_own_path_is_a_502(serve, closed_port):
    down = sidecar_gateway(serve, f"http://127.0.0.1:{closed_port}", engine_metrics="path")
    response = httpx.get(f"{down}/engine/metrics")
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_unreachable"


def test_llmds_headers_reach_the_engine_and_the_session_token_comes_back(merging, fake):
    sent = {**LLMD_HEADERS, "x-session-token": "tok-1", "x-not-listed": "no"}
    with openai_client(merging, default_headers=sent) as client:
        answer = client.chat.completions.with_raw_response.create(model="fake-qwen3", messages=ASK)
    assert answer.headers["x-session-token"] == "tok-1"
    headers, body = fake.requests[-1]
    assert {name: headers.get(name) for name in LLMD_HEADERS} == LLMD_HEADERS
    assert "x-not-listed" not in headers and "x-session-token" not in headers
    assert headers["authorization"] == f"Bearer {BACKEND_KEY}"
    assert body["model"] == "fake-qwen3"  # the name the picker wrote is the engine's


def test_the_headers_pass_on_a_stream_of_the_messages_surface(merging, fake):
    sdk = anthropic_client(merging, default_headers={"x-data-parallel-rank": "3", "x-session-token": "tok-2"})
    response = sdk.messages.with_raw_response.create(model="fake-qwen3", max_tokens=64, messages=ASK, stream=True)
    assert response.headers["x-session-token"] == "tok-2"
    assert [event.type for event in response.parse()][-1] == "message_stop"
    assert fake.requests[-1][0]["x-data-parallel-rank"] == "3"


def test_other_allow_lists_are_configurable(serve, fake, fake_backend_server):
    gateway = sidecar_gateway(serve, fake_backend_server[1], forward_headers="x-tenant, X-Lora", echo_headers=[])
    headers = {"x-tenant": "t1", "x-lora": "a", "x-prefiller-host-port": "10.0.0.7:8000", "x-session-token": "s"}
    response = httpx.post(f"{gateway}/v1/chat/completions", json={"model": "m", "messages": ASK}, headers=headers)
    assert response.status_code == 200
    assert "x-session-token" not in response.headers
    upstream = fake.requests[-1][0]
    assert (upstream["x-tenant"], upstream["x-lora"]) == ("t1", "a")
    assert "x-prefiller-host-port" not in upstream


@pytest.mark.parametrize("name", ["authorization", "Content-Type", "host"])
def test_the_gateways_own_headers_cannot_be_passed_through(name):
    with pytest.raises(pydantic.ValidationError, match="set by the gateway itself"):
        Config.model_validate(
            {"server": {"sidecar": {"forward_headers": [name]}}, "models": [{"name": "m", "backend": {"demo": True}}]}
        )


def test_a_stream_asks_the_engine_for_usage_but_shows_it_only_when_asked(merging, fake):
    client = openai_client(merging)
    chunks = list(client.chat.completions.create(model="fake-qwen3", messages=ASK, stream=True))
    assert fake.requests[-1][1]["stream_options"] == {"include_usage": True}
    assert all(chunk.usage is None for chunk in chunks)
    assert all(chunk.choices for chunk in chunks)
    samples = picker_scrape(f"{merging}/metrics")
    assert samples['parsegate_tokens_total{"kind":"completion","model":"fake-qwen3"}'] >= USAGE["completion_tokens"]
    asked = list(
        client.chat.completions.create(
            model="fake-qwen3", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
    )
    assert asked[-1].usage is not None and asked[-1].usage.completion_tokens == USAGE["completion_tokens"]


def test_a_bare_off_in_yaml_turns_the_engines_metrics_off(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("server:\n  sidecar:\n    engine_metrics: off\nmodels: [{name: m, backend: {demo: true}}]\n")
    assert load_config(path, environ={}).server.sidecar.engine_metrics == "off"
