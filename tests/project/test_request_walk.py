"""The modules one streamed request runs code in, per surface, are the ones
docs/architecture.md draws ("One request, module by module"): the request
is traced in-process (`sys.setprofile` on the thread that serves it), so a
module the walk gains or loses shows here before a reader of the page
meets it."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import FakeBackend

REPO = Path(__file__).resolve().parents[2]
GATEWAY = REPO / "gateway"
ARCHITECTURE = REPO / "docs" / "architecture.md"
TEXT = '<think>so</think>Hi <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
USER = [{"role": "user", "content": "hi"}]
REQUESTS = {
    "chat": (
        "/v1/chat/completions",
        {"messages": USER, "tools": [{"type": "function", "function": {"name": "f", "parameters": SCHEMA}}]},
    ),
    "responses": ("/v1/responses", {"input": "hi", "tools": [{"type": "function", "name": "f", "parameters": SCHEMA}]}),
    "messages": (
        "/v1/messages",
        {"max_tokens": 64, "messages": USER, "tools": [{"name": "f", "input_schema": SCHEMA}]},
    ),
}


def drawn_walks() -> dict[str, set[str]]:
    """The modules docs/architecture.md's walk table names per surface."""
    text = ARCHITECTURE.read_text()
    section = text.split("### One request, module by module", 1)[1].split("\n#", 1)[0]
    walks: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in REQUESTS:
            walks[cells[0]] = set(re.findall(r"`([\w/]+\.py)`", cells[2]))
    return walks


def walk(path: str, body: dict, backend: FakeBackend, url: str, tmp_path: Path) -> set[str]:
    """The gateway modules that ran code while the gateway answered one
    streamed request (the second of two: the first warms what is kept)."""
    config = {
        "store": {"url": str(tmp_path / "store.db")},
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{url}/v1", "server": "vllm"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            }
        ],
    }
    app = create_app(Config.model_validate(config))
    ran: set[str] = set()

    def profile(frame, event: str, arg: object) -> None:
        if event == "call" and not _in_store_purge(frame):
            ran.add(frame.f_code.co_filename)

    async def run() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
                for _ in range(2):
                    backend.script(TEXT)
                    ran.clear()
                    sys.setprofile(profile)
                    try:
                        response = await client.post(path, json={"model": "qwen3", "stream": True, **body})
                    finally:
                        sys.setprofile(None)
                    assert response.status_code == 200 and b"f" in response.content

    asyncio.run(run())
    return {Path(name).relative_to(GATEWAY).as_posix() for name in ran if Path(name).is_relative_to(GATEWAY)}


def _in_store_purge(frame) -> bool:
    """Whether `frame` runs for the store's periodic purge, a task of the
    app's own that starts with it and may run beside the request."""
    while frame is not None:
        if frame.f_code.co_name == "purge_periodically":
            return True
        frame = frame.f_back
    return False


@pytest.mark.parametrize("surface", REQUESTS)
def test_a_streamed_request_walks_the_modules_the_page_draws(
    surface: str, fake: FakeBackend, fake_backend_server: tuple[FakeBackend, str], tmp_path: Path
) -> None:
    path, body = REQUESTS[surface]
    ran = walk(path, body, fake, fake_backend_server[1], tmp_path)
    drawn = drawn_walks()[surface]
    assert sorted(ran - drawn) == [] and sorted(drawn - ran) == [], f"ran: {sorted(ran)}"
    assert ran, "the trace saw the gateway run"


def test_the_walk_table_names_modules_that_exist() -> None:
    for surface, modules in drawn_walks().items():
        assert modules, surface
        assert [module for module in modules if not (GATEWAY / module).is_file()] == []
