"""Compiling a chat template runs template code: jinja folds constant
expressions as it compiles, calling their filters, so `{{ "a"|center(400000000) }}`
builds that string before a single request is rendered. The gateway
compiles a template only in a worker process with the render bounds (its
memory cap, the model's render_timeout): a template file that breaks them
stops `parsegate serve` naming the file, a server's template (`GET /props`)
is a 502 naming the model while `/health` goes on answering, and that
template is not compiled again until the server reports another."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from gateway.upstream.asked_once import FAILURE_KEPT_SECONDS
from tests.render_workers import render_workers
from tests.scripted_backend import ScriptedBackend, completion_answer

# Seconds of CPU in jinja's constant folding, in 115 MB: killed at the render_timeout (1 s)
FOLDING = '{{ "a"|center(100000000)|wordcount }}' * 8
# The issue's template: a 400 MB string folded in, 1.5 GB to compile, past the workers' memory cap
HUGE_FOLD = '{{ "a"|center(400000000) }}'
GOOD = "{% for m in messages %}[{{ m.content }}]{% endfor %}"
MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def gateway(serve, scripted: ScriptedBackend) -> str:
    def entry(name: str) -> dict:
        backend = {"url": f"{scripted.url}/v1", "server": "other"}
        plain = {"reasoning_parser": "none", "tool_call_parser": "none"}
        return {"name": name, "backend": backend, "chat_template": "backend", "render_timeout": 1, **plain}

    return serve(create_app(Config.model_validate({"models": [entry("folding"), entry("folding-again")]})))


@pytest.fixture
def http(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=120) as client:
        yield client


def _asked_watching(http: httpx.Client, model: str) -> tuple[httpx.Response, int, set[int]]:
    """A chat request, with `/health` asked while it is in flight (how many
    times it answered) and the render workers seen running meanwhile."""
    answered, seen = 0, set()
    before = render_workers()
    with ThreadPoolExecutor(1) as pool:
        asking = pool.submit(http.post, "/v1/chat/completions", json={"model": model, "messages": MESSAGES})
        while not asking.done():
            seen |= render_workers() - before
            assert http.get("/health", timeout=10).json() == {"status": "ok"}
            answered += 1
        return asking.result(), answered, seen


def test_a_servers_template_folding_past_render_timeout_is_a_502_and_health_answers_meanwhile(http, side) -> None:
    side.routes["/props"] = (200, {"chat_template": FOLDING})
    response, answered, seen = _asked_watching(http, "folding")
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert error["code"] == "upstream_no_template"
    assert error["message"] == (
        "the backend for model 'folding' did not report its chat template at /props: "
        "the chat template did not compile within its render_timeout (1 s)"
    )
    assert answered > 0 and seen  # compiled in a worker, killed at the deadline; /health answered meanwhile
    assert side.asked("/props") == 1


def test_a_servers_template_that_did_not_compile_is_not_compiled_again_until_it_changes(
    http, side, failure_clock
) -> None:
    side.routes["/props"] = (200, {"chat_template": FOLDING})
    response, _, seen = _asked_watching(http, "folding-again")
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert "the chat template did not compile within its render_timeout (1 s)" in error["message"]
    assert seen  # compiled once, in a worker

    failure_clock.pass_the_window()
    response, _, seen = _asked_watching(http, "folding-again")
    assert response.status_code == 502 and response.json()["error"] == error
    assert side.asked("/props") == 2  # the server is asked again after the failure's window
    assert seen == set()  # but the same template is not compiled again: no worker ran

    side.routes["/props"] = (200, {"chat_template": GOOD})
    side.routes["/v1/completions"] = completion_answer("Hello.")
    failure_clock.now += FAILURE_KEPT_SECONDS  # past the second failure's window
    reply = http.post("/v1/chat/completions", json={"model": "folding-again", "messages": MESSAGES})
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "Hello."
    sent = side.received("/v1/completions")[-1]
    assert isinstance(sent, dict) and sent["prompt"] == "[Hi]"


@pytest.mark.parametrize(
    ("template", "key", "render_timeout", "problem"),
    [
        (HUGE_FOLD, "chat_template", 60, "the chat template as it compiled ran out of memory (1152 MiB)"),
        (FOLDING, "chat_template", 1, "the chat template did not compile within its render_timeout (1 s)"),
        (FOLDING, "parsers_from", 1, "the chat template did not compile within its render_timeout (1 s)"),
    ],
)
def test_serve_refuses_a_template_file_whose_compiling_breaks_the_render_bounds(
    tmp_path, closed_port, template, key, render_timeout, problem
) -> None:
    (tmp_path / "folding.jinja").write_text(template, encoding="utf-8")
    entry = {
        "name": "folding",
        "backend": {"url": "http://127.0.0.1:9/v1"},
        key: "folding.jinja",
        "render_timeout": render_timeout,
    }
    (tmp_path / "config.yaml").write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(tmp_path / "config.yaml")]
    done = subprocess.run([*command, "--port", str(closed_port)], capture_output=True, timeout=120, check=False)
    message = done.stderr.decode()
    assert done.returncode == 2, message
    assert "Traceback" not in message
    assert f"models['folding'].{key}: {tmp_path / 'folding.jinja'}: {problem}" in message
