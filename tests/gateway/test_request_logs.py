"""Request ids (taken from `X-Request-ID` or made, echoed, forwarded
upstream) and the one log line per request of `parsegate serve`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import httpx
import orjson
import pytest
import yaml

from tests.conftest import on_this_checkout
from tests.sdk_clients import openai_client

MESSAGES = [{"role": "user", "content": "Hi"}]


def test_a_given_request_id_is_echoed_and_forwarded_upstream(client, fake):
    raw = client.chat.completions.with_raw_response.create(
        model="qwen3", messages=MESSAGES, stream=True, extra_headers={"X-Request-ID": "trace-42.a"}
    )
    list(raw.parse())
    assert raw.headers["x-request-id"] == "trace-42.a"
    assert fake.requests[-1][0]["x-request-id"] == "trace-42.a"


@pytest.mark.parametrize("given", [None, "bad id with spaces", "x" * 129])
def test_otherwise_a_request_id_is_made(client, fake, given):
    headers = {"X-Request-ID": given} if given else {}
    raw = client.chat.completions.with_raw_response.create(model="qwen3", messages=MESSAGES, extra_headers=headers)
    made = raw.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert fake.requests[-1][0]["x-request-id"] == made


def test_errors_carry_the_request_id_too(gateway_url, fake):
    response = httpx.post(f"{gateway_url}/v1/chat/completions", content=b"{", headers={"X-Request-ID": "r-1"})
    assert response.status_code == 400 and response.headers["x-request-id"] == "r-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def serve_cli(tmp_path, gateway_config):
    """`serve_cli(*flags)` runs `parsegate serve` in a subprocess until it
    answers /health; returns (base URL, process). Stopped at teardown."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(gateway_config))
    started: list[subprocess.Popen] = []

    def start(*flags: str) -> tuple[str, subprocess.Popen]:
        port = _free_port()
        command = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port), *flags]
        env = on_this_checkout({**os.environ, "PYTHONUNBUFFERED": "1"})
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                httpx.get(f"{url}/health", timeout=1)
                return url, process
            except httpx.TransportError:
                time.sleep(0.05)  # polling a real condition: the server answering
        raise RuntimeError(f"parsegate serve did not start: {process.stderr.read()}")

    yield start
    for process in started:
        process.kill()
        process.wait()


def _request_lines(process: subprocess.Popen) -> list[str]:
    process.terminate()
    _, err = process.communicate(timeout=15)
    return err.splitlines()


@pytest.mark.slow  # 8 s
def test_json_logs_give_one_object_per_request(serve_cli, fake):
    fake.script("<think>Hm.</think>Hello!")
    url, process = serve_cli("--log-format", "json")
    client = openai_client(url)
    stream = client.chat.completions.create(
        model="qwen3",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"X-Request-ID": "json-log-1"},
    )
    list(stream)

    lines = [orjson.loads(line) for line in _request_lines(process)]
    assert all(isinstance(line, dict) and {"time", "level", "logger", "message"} <= set(line) for line in lines)
    [entry] = [line for line in lines if line.get("request_id") == "json-log-1"]
    assert entry["logger"] == "parsegate.access" and entry["message"] == "POST /v1/chat/completions 200"
    assert entry["model"] == "qwen3" and entry["status"] == 200 and entry["stream"] is True
    assert entry["prompt_tokens"] == 7 and entry["completion_tokens"] == 11
    assert 0 < entry["ttft_ms"] <= entry["duration_ms"]
    assert entry["upstream_error"] is None


def test_text_logs_put_the_fields_after_the_request_line(serve_cli, fake):
    url, process = serve_cli()
    httpx.post(
        f"{url}/v1/chat/completions", json={"model": "down", "messages": MESSAGES}, headers={"X-Request-ID": "t-1"}
    )

    [line] = [line for line in _request_lines(process) if "request_id=t-1" in line]
    assert line.startswith("INFO:") and "POST /v1/chat/completions 502" in line
    assert "model=down" in line and "upstream_error=unreachable" in line
