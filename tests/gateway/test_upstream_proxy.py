"""`HTTP_PROXY` / `NO_PROXY` apply to backend calls (docs/operations.md):
the gateway reaches a backend through the proxy the environment names,
with the proxy's credentials, and directly when `NO_PROXY` exempts it."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.scripted_backend import ScriptedBackend, chat_answer

BACKEND = "http://backend.invalid:9/v1"  # resolves nowhere: only a proxy can reach it
ASK = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture
def proxy() -> ScriptedBackend:
    """A forward proxy: requests arrive with the backend's absolute URL."""
    proxy = ScriptedBackend()
    proxy.routes[f"{BACKEND}/chat/completions"] = chat_answer("through the proxy")
    return proxy


@pytest.fixture
def ask(serve: Callable[[object], str]) -> Callable[[], httpx.Response]:
    def post() -> httpx.Response:
        config = Config.model_validate({"models": [{"name": "m", "backend": {"url": BACKEND, "server": "vllm"}}]})
        gateway = serve(create_app(config))
        with httpx.Client(base_url=gateway, timeout=10, trust_env=False) as http:
            return http.post("/v1/chat/completions", json=ASK)

    return post


def test_backend_reached_through_the_environments_proxy(
    proxy: ScriptedBackend, ask: Callable[[], httpx.Response], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://gate:pass@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    answer = ask()
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "through the proxy"
    method, target, headers, _ = proxy.requests[-1]
    assert (method, target) == ("POST", f"{BACKEND}/chat/completions")
    assert headers["proxy-authorization"] == "Basic Z2F0ZTpwYXNz"  # gate:pass


def test_no_proxy_exempts_the_backend(
    proxy: ScriptedBackend, ask: Callable[[], httpx.Response], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "backend.invalid")
    answer = ask()
    assert answer.status_code == 502, answer.text
    assert answer.json()["error"]["code"] == "upstream_unreachable"
    assert proxy.requests == []
