"""A real `parsegate serve` process: graceful shutdown drains streams in
flight, up to `server.shutdown_timeout`."""

from __future__ import annotations

import signal
import threading

import httpx
import orjson
import pytest

from tests.gateway.test_metrics import scrape

pytestmark = pytest.mark.slow  # 10 to 16 s each

MESSAGES = [{"role": "user", "content": "Hi"}]


def wait_until(condition, timeout: float = 10.0) -> None:
    """Poll a real condition (not a fixed sleep) until it holds."""
    pause = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        pause.wait(0.02)
    raise AssertionError("condition never held")


def refuses_connections(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=1)
    except httpx.TransportError:
        return True
    return False


def config_for(fake_url: str, **server: object) -> dict:
    return {"server": server, "models": [{"name": "plain", "backend": {"url": f"{fake_url}/v1"}}]}


def test_shutdown_lets_a_stream_in_flight_finish(gateway_process, fake_backend_server, fake):
    fake.script("Hello there, a long answer", chunk_size=4)
    fake.hold_after = 2
    gateway = gateway_process(config_for(fake_backend_server[1], shutdown_timeout=20))
    body = {"model": "plain", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body, timeout=30) as response:
        lines = response.iter_lines()
        assert next(lines).startswith("data: ")
        assert fake.held.wait(timeout=10)
        gateway.process.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(gateway.url))  # shutting down: no new requests
        fake.release()
        events = [line[6:] for line in lines if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(event) for event in events[:-1]]
    assert not any("error" in chunk for chunk in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]).endswith("answer")
    assert gateway.process.wait(timeout=20) == -signal.SIGTERM  # uvicorn re-raises the signal once done


def test_shutdown_stops_waiting_after_the_timeout(gateway_process, fake_backend_server, fake):
    fake.hold_after = 2
    gateway = gateway_process(config_for(fake_backend_server[1], shutdown_timeout=0.5))
    body = {"model": "plain", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body, timeout=30) as response:
        assert next(response.iter_lines()).startswith("data: ")
        assert fake.held.wait(timeout=10)
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.wait(timeout=20) == -signal.SIGTERM  # uvicorn re-raises the signal once done


def model_ids(url: str, key: str | None = None) -> list[str] | int:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(f"{url}/v1/models", headers=headers, timeout=5)
    return [model["id"] for model in response.json()["data"]] if response.status_code == 200 else response.status_code


def test_sighup_reloads_the_config_and_keeps_streams_in_flight(gateway_process, fake_backend_server, fake):
    fake_url = f"{fake_backend_server[1]}/v1"
    fake.script("Hello there, a long answer", chunk_size=4)
    fake.hold_after = 2
    gateway = gateway_process(config_for(fake_backend_server[1]))
    assert model_ids(gateway.url) == ["plain"]
    body = {"model": "plain", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body, timeout=30) as response:
        lines = response.iter_lines()
        assert next(lines).startswith("data: ")
        assert fake.held.wait(timeout=10)
        new = {
            "server": {"api_keys": ["sk-new"]},
            "models": [
                {"name": "renamed", "backend": {"url": fake_url}},
                {"name": "other", "backend": {"url": fake_url}},
            ],
        }
        with open(gateway.config_path, "w") as file:
            file.write(orjson.dumps(new).decode())  # JSON is YAML
        gateway.process.send_signal(signal.SIGHUP)
        wait_until(lambda: model_ids(gateway.url, "sk-new") == ["renamed", "other"])
        assert model_ids(gateway.url) == 401  # the new keys hold at once
        fake.release()
        events = [line[6:] for line in lines if line.startswith("data: ")]
    assert events[-1] == "[DONE]" and not any("error" in orjson.loads(event) for event in events[:-1])
    assert "".join(orjson.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1]).endswith("answer")

    with open(gateway.config_path, "w") as file:
        file.write("models:\n  - {name: broken, backend: {url: 'http://x/v1'}, tool_call_parser: nope}\n")
    gateway.process.send_signal(signal.SIGHUP)
    wait_until(lambda: any("reload refused" in line for line in gateway.log))
    assert "unknown tool-call parser 'nope'" in "".join(gateway.log)
    assert model_ids(gateway.url, "sk-new") == ["renamed", "other"]
    reply = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "other", "messages": MESSAGES},
        headers={"authorization": "Bearer sk-new"},
        timeout=10,
    )
    assert reply.status_code == 200


def test_models_added_by_sighup_are_traced_and_have_metric_series(gateway_process, fake_backend_server, fake):
    fake_url = f"{fake_backend_server[1]}/v1"
    config = {"server": {"opentelemetry": True}, "models": [{"name": "plain", "backend": {"url": fake_url}}]}
    gateway = gateway_process(config, env={"OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"})
    config["models"].append({"name": "added", "backend": {"url": fake_url}})
    with open(gateway.config_path, "w") as file:
        file.write(orjson.dumps(config).decode())
    gateway.process.send_signal(signal.SIGHUP)
    wait_until(lambda: model_ids(gateway.url) == ["plain", "added"])
    for model in ("plain", "added"):
        httpx.post(f"{gateway.url}/v1/chat/completions", json={"model": model, "messages": MESSAGES}, timeout=10)
        assert "traceparent" in fake.requests[-1][0], model
    series = ("parsegate_upstream_errors_total", frozenset({"model": "added", "kind": "unreachable"}.items()))
    assert scrape(gateway.url)[series] == 0
