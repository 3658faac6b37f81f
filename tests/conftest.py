"""Shared fixtures: real servers on loopback ports, run in background threads."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn
from hypothesis import given, settings

import gateway.ops.store_config as store_config
from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import BACKEND_KEY, FakeBackend

REPO = Path(__file__).resolve().parent.parent
CHECKOUT_STORE_FILE = REPO / store_config.DEFAULT_SQLITE_FILE  # bound before `default_store_file` moves the default


# Every run draws the same property examples (each test's follow from its
# code), so that a red run is always the code's doing. New examples come from
# `python -m tests.property_sweep`, which runs every property test under the
# "random" profile with a fresh seed per round.
settings.register_profile("derandomized", derandomize=True, database=None)
settings.register_profile("random", derandomize=False, database=None)
settings.load_profile("derandomized")


def uses_hypothesis(test: Callable[..., object]) -> bool:
    """Whether `test` is a property test: given its examples by hypothesis
    (`@given` on it), or calling `given` itself on a function it defines."""
    if getattr(test, "is_hypothesis_test", False):
        return True
    code = getattr(test, "__code__", None)
    return code is not None and any(test.__globals__.get(name) is given for name in code.co_names)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `property` marker on every property test (pyproject.toml)."""
    for item in items:
        if isinstance(item, pytest.Function) and uses_hypothesis(item.obj):
            item.add_marker(pytest.mark.property)


class _Server(uvicorn.Server):
    """A uvicorn server that says when it has started (or given up)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


@pytest.fixture(scope="session", autouse=True)
def no_store_file_left_in_the_checkout() -> Iterator[None]:
    """A test run leaves no default store file (`parsegate-store.db`,
    docs/state.md) in the checkout: a `parsegate serve` a test starts runs
    in a folder of the test's, or is given a store there."""
    there_before = CHECKOUT_STORE_FILE.exists()
    yield
    assert there_before or not CHECKOUT_STORE_FILE.exists(), f"a test left {CHECKOUT_STORE_FILE} behind"


@pytest.fixture(scope="session", autouse=True)
def default_store_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """An app made in a test with no `store:` of its own keeps its responses
    in a file of the session's, not in `parsegate-store.db` of the checkout."""
    default = store_config.DEFAULT_SQLITE_FILE
    store_config.DEFAULT_SQLITE_FILE = str(tmp_path_factory.mktemp("default-store") / "parsegate-store.db")
    yield
    store_config.DEFAULT_SQLITE_FILE = default


@pytest.fixture(scope="session")
def serve() -> Iterator[Callable[[object], str]]:
    """`serve(app)` runs an ASGI app on a free loopback port until the end
    of the session and returns its base URL."""
    running: list[tuple[_Server, threading.Thread]] = []

    def start(app: object) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
        server = _Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        server.ready.wait(timeout=30)
        if not server.started:
            raise RuntimeError("test server failed to start")
        running.append((server, thread))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for server, _ in running:
        server.should_exit = True
    for _, thread in running:
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def fake_backend_server(serve: Callable[[object], str]) -> tuple[FakeBackend, str]:
    backend = FakeBackend()
    return backend, serve(backend.app)


@pytest.fixture
def fake(fake_backend_server: tuple[FakeBackend, str]) -> FakeBackend:
    """The shared fake backend, reset for this test."""
    backend, _ = fake_backend_server
    backend.reset()
    return backend


@pytest.fixture(scope="session")
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (held, so nothing else takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture(scope="session")
def gateway_config(
    fake_backend_server: tuple[FakeBackend, str], closed_port: int, tmp_path_factory: pytest.TempPathFactory
) -> dict:
    """A gateway config (as YAML would give it) with models on the fake
    backend, storing responses in a SQLite file of the session's own."""
    _, fake_url = fake_backend_server
    return {
        "store": {"url": str(tmp_path_factory.mktemp("store") / "responses.db")},
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{fake_url}/v1", "model": "fake-qwen3", "api_key": BACKEND_KEY},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            },
            {"name": "plain", "backend": {"url": f"{fake_url}/v1"}},
            {
                "name": "kimi",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "kimi_k2",
                "tool_call_parser": "kimi_k2",
            },
            {
                "name": "gpt-oss",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "gpt-oss",
                "tool_call_parser": "gpt-oss",
            },
            {
                "name": "special-tokens-on",
                "backend": {"url": f"{fake_url}/v1"},
                "keep_special_tokens": True,
            },
            {
                "name": "kimi-special-tokens-off",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "kimi_k2",
                "tool_call_parser": "kimi_k2",
                "keep_special_tokens": False,
            },
            {
                "name": "qwen3-thinking-on",
                "backend": {"url": f"{fake_url}/v1", "model": "fake-qwen3"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
                "extra_body": {"top_k": 20, "chat_template_kwargs": {"enable_thinking": True, "custom": "x"}},
            },
            {"name": "qwen3-by-name", "backend": {"url": f"{fake_url}/v1", "model": "Qwen/Qwen3-8B"}},
            {
                "name": "qwen3-opted-out",
                "backend": {"url": f"{fake_url}/v1", "model": "Qwen/Qwen3-8B"},
                "reasoning_parser": "none",
                "tool_call_parser": "none",
            },
            {
                "name": "qwen3-vl",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
                "images": True,
            },
            {"name": "down", "backend": {"url": f"http://127.0.0.1:{closed_port}/v1"}},
            {"name": "slow", "backend": {"url": f"{fake_url}/v1", "timeout": 0.2}},
        ],
    }


@pytest.fixture(scope="session")
def gateway_url(serve: Callable[[object], str], gateway_config: dict) -> str:
    """The real gateway app, served on loopback in front of the fake backend."""
    return serve(create_app(Config.model_validate(gateway_config)))


def on_this_checkout(env: dict[str, str]) -> dict[str, str]:
    """`env` with this checkout first on the import path: `python -m gateway`
    run in another folder (a test's, where the default store file
    `parsegate-store.db` then lands) still runs this checkout's gateway."""
    path = [str(REPO), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(path)}


class GatewayProcess:
    """A real `parsegate serve` subprocess, run in its config's folder (a
    test's, so the default store file lands there); its log lines are collected."""

    def __init__(self, config_path: str, env: dict[str, str] | None = None) -> None:
        import os
        import subprocess
        import sys

        self.config_path = config_path
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--config", config_path, "--port", str(self.port)],
            cwd=os.path.dirname(os.path.abspath(config_path)),
            env=on_this_checkout({**os.environ, **(env or {})}),
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._up = threading.Event()
        self._readers = [
            threading.Thread(target=self._collect, args=(stream,), daemon=True)
            for stream in (self.process.stderr, self.process.stdout)
        ]
        for reader in self._readers:
            reader.start()
        self._up.wait(timeout=30)
        if not self._up.is_set():
            raise RuntimeError("parsegate serve did not start:\n" + "".join(self.log))

    def _collect(self, stream) -> None:
        for line in stream:
            self.log.append(line)
            if "Uvicorn running on" in line:
                self._up.set()
        self._up.set()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        code = self.process.wait(timeout=30)
        for reader in self._readers:
            reader.join(timeout=10)
        return code


@pytest.fixture
def gateway_process(tmp_path) -> Iterator[Callable[..., GatewayProcess]]:
    """`gateway_process(config, env=None)` runs `parsegate serve` on a config
    mapping (written as YAML) and stops it after the test."""
    import yaml

    started: list[GatewayProcess] = []

    def start(config: dict, env: dict[str, str] | None = None) -> GatewayProcess:
        path = tmp_path / f"config-{len(started)}.yaml"
        path.write_text(yaml.safe_dump(config))
        started.append(GatewayProcess(str(path), env))
        return started[-1]

    yield start
    for process in started:
        process.stop()
