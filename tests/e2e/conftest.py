"""Fixtures for tests against a real llama.cpp `llama-server`.

The server runs a tiny random model made in the test (tiny_gguf.py) whose
output is forced with a grammar (llama.literal_grammar). Without the binary
these tests skip, except in CI, where they fail: CI builds the binary with
.ci/llama_server.sh before pytest. The same holds for the one real model,
SmolLM2 (smollm2.py), which .ci/run installs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.llama import RAW_TEXT_ARGS, LlamaServer, StartServer, find_llama_server
from tests.e2e.smollm2 import find_smollm2
from tests.e2e.tiny_gguf import BOS, CHAT_TEMPLATE, EOS, MARKERS, write_tiny_gguf


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is an `e2e` test (README.md's quick run leaves them out)."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.e2e)


def _required(found: tuple[Path | None, str], what: str) -> Path:
    path, why = found
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide {what}: {why}")
        pytest.skip(why)
    return path


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    return _required(find_llama_server(), "llama-server (.ci/run builds it)")


@pytest.fixture(scope="session")
def smollm2_model() -> Path:
    return _required(find_smollm2(), "the SmolLM2 GGUF (.ci/run installs it)")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny.gguf"
    return write_tiny_gguf(path, markers=MARKERS, chat_template=CHAT_TEMPLATE, bos=BOS, eos=EOS)


@pytest.fixture(scope="session")
def start_llama_server(
    llama_server_binary: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StartServer]:
    """`start_llama_server(*args, model=...)` runs one more server until the
    end of the session, on the tiny model unless told otherwise."""
    servers: list[LlamaServer] = []

    def start(*args: str, model: Path | None = None) -> LlamaServer:
        log = tmp_path_factory.mktemp("llama-server") / "server.log"
        server = LlamaServer(llama_server_binary, model or tiny_model, log, args=args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def llama_server(start_llama_server: StartServer) -> LlamaServer:
    """The shared server, set up as a raw-text gateway would use it."""
    return start_llama_server(*RAW_TEXT_ARGS)


@pytest.fixture
def llama(llama_server: LlamaServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=llama_server.url, timeout=60.0, trust_env=False) as client:
        yield client
