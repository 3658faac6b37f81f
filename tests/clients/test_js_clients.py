"""The JavaScript clients people point at an OpenAI-compatible server, run
with the machine's Node.js against the real gateway: openai-node (`openai`)
and the Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`). Each turn makes
three parallel tool calls after some reasoning.

The clients are pinned in tests/clients/js/package-lock.json; the `node` fixture
runs `npm ci` there once (node_modules is kept and reused)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parent / "js"
REASONING = "Three lookups: two cities, one clock."
THREE_CALLS = (
    f"<think>\n{REASONING}\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}\n</tool_call>'
)
CALLS = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}), ("get_time", {"zone": "Europe/Paris"})]


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` executable, with tests/clients/js's locked packages installed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("the JavaScript client tests need Node.js (>= 18) and npm on PATH, e.g. apt-get install nodejs npm")
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < (JS / "package-lock.json").stat().st_mtime:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=JS, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci in {JS} failed:\n{done.stdout}\n{done.stderr}")
    return node


def run(node: str, script: str, gateway_url: str, model: str = "qwen3") -> dict:
    done = subprocess.run(
        [node, script, f"{gateway_url}/v1", model], cwd=JS, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def calls_of(summary: dict, arguments: str = "arguments") -> list[tuple[str, dict]]:
    return [(call["name"], call[arguments]) for call in summary["tool_calls"]]


def test_openai_node_create_stream_and_stream_helper(node, gateway_url, fake):
    fake.script(THREE_CALLS, chunk_size=3)
    result = run(node, "openai_node.mjs", gateway_url)
    for way in ("create", "stream", "stream_helper"):
        summary = result[way]
        assert calls_of(summary) == CALLS, way
        assert summary["finish_reason"] == "tool_calls", way
        ids = [call["id"] for call in summary["tool_calls"]]
        assert all(id.startswith("call_") for id in ids) and len(set(ids)) == 3, way
    assert result["create"]["reasoning"].strip() == REASONING
    assert result["stream"]["reasoning"].strip() == REASONING
    assert len(fake.requests) == 3


def test_vercel_ai_sdk_reads_reasoning_and_tool_calls(node, gateway_url, fake):
    fake.script(THREE_CALLS, chunk_size=3)
    result = run(node, "ai_sdk.mjs", gateway_url)
    for way in ("generate", "stream"):
        summary = result[way]
        assert summary["reasoning"].strip() == REASONING, way
        assert calls_of(summary, "input") == CALLS, way
        assert summary["finish_reason"] == "tool-calls", way
        assert summary["text"].strip() == "", way
        assert len({call["id"] for call in summary["tool_calls"]}) == 3, way
    assert result["stream"]["reasoning_streamed"] and result["stream"]["tool_input_streamed"]
    assert result["stream"]["errors"] == []
