"""Fixtures for tests against a real llama.cpp `llama-server`.

The server runs a tiny random model made in the test (tiny_gguf.py) whose
output is forced with a grammar (llama.literal_grammar). Without the binary
these tests skip, except in CI, where they fail: CI builds the binary with
.ci/llama_server.sh before pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.llama import RAW_TEXT_ARGS, LlamaServer, StartServer, find_llama_server
from tests.e2e.tiny_gguf import BOS, CHAT_TEMPLATE, EOS, MARKERS, write_tiny_gguf


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    binary, why = find_llama_server()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide llama-server (.ci/run builds it): {why}")
        pytest.skip(why)
    return binary


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
