"""The JavaScript clients people point at an OpenAI-compatible server, run
with the machine's Node.js against the real gateway: openai-node (`openai`),
the Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) and, on the Messages
surface, Anthropic's `@anthropic-ai/sdk`. Each turn makes three parallel
tool calls after some reasoning.

The clients are pinned in tests/clients/js/package-lock.json; the `node` fixture
runs `npm ci` there when node_modules lacks a pinned package or version
(node_modules is kept and reused)."""

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


def installed() -> bool:
    """Every package the lock file pins is in node_modules, at its version."""
    hidden = JS / "node_modules" / ".package-lock.json"
    if not hidden.exists():
        return False
    have = json.loads(hidden.read_text())["packages"]
    wanted = json.loads((JS / "package-lock.json").read_text())["packages"]
    return all(
        (JS / path).exists() and have.get(path, {}).get("version") == package.get("version")
        for path, package in wanted.items()
        if path
    )


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` executable, with tests/clients/js's locked packages installed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("the JavaScript client tests need Node.js (>= 18) and npm on PATH, e.g. apt-get install nodejs npm")
    if not installed():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=JS, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci in {JS} failed:\n{done.stdout}\n{done.stderr}")
    return node


def run(node: str, script: str, base_url: str, model: str = "qwen3") -> dict:
    done = subprocess.run([node, script, base_url, model], cwd=JS, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def calls_of(summary: dict, arguments: str = "arguments") -> list[tuple[str, dict]]:
    return [(call["name"], call[arguments]) for call in summary["tool_calls"]]


def test_openai_node_create_stream_and_stream_helper(node, gateway_url, fake):
    fake.script(THREE_CALLS, chunk_size=3)
    result = run(node, "openai_node.mjs", f"{gateway_url}/v1")
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
    result = run(node, "ai_sdk.mjs", f"{gateway_url}/v1")
    for way in ("generate", "stream"):
        summary = result[way]
        assert summary["reasoning"].strip() == REASONING, way
        assert calls_of(summary, "input") == CALLS, way
        assert summary["finish_reason"] == "tool-calls", way
        assert summary["text"].strip() == "", way
        assert len({call["id"] for call in summary["tool_calls"]}) == 3, way
    assert result["stream"]["reasoning_streamed"] and result["stream"]["tool_input_streamed"]
    assert result["stream"]["errors"] == []


def test_anthropic_sdk_create_stream_and_stream_helper(node, gateway_url, fake):
    fake.script(THREE_CALLS, chunk_size=3)
    result = run(node, "anthropic_sdk.mjs", gateway_url)
    thinking = {"type": "thinking", "thinking": f"\n{REASONING}\n", "signed": True}
    for way in ("create", "stream", "stream_helper"):
        summary = result[way]
        assert summary["blocks"][0] == thinking, way
        calls = summary["blocks"][1:]
        assert [(call["type"], call["name"], call["input"]) for call in calls] == [
            ("tool_use", name, arguments) for name, arguments in CALLS
        ], way
        ids = [call["id"] for call in calls]
        assert all(id.startswith("toolu_") for id in ids) and len(set(ids)) == 3, way
        assert summary["stop_reason"] == "tool_use", way
    assert result["create"]["usage"] == result["stream_helper"]["usage"] == {"input_tokens": 7, "output_tokens": 11}
    assert result["stream_helper"]["thinking_streamed"] == f"\n{REASONING}\n"
    events = [event for event in result["stream"]["events"] if event != "ping"]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert events.count("content_block_start") == events.count("content_block_stop") == 4
    assert fake.last_body["chat_template_kwargs"] == {"enable_thinking": True, "thinking": True}
    assert len(fake.requests) == 3


def test_openai_node_responses_create_stream_and_stream_helper(node, gateway_url, fake):
    fake.script(THREE_CALLS, chunk_size=3)
    result = run(node, "openai_responses.mjs", f"{gateway_url}/v1")
    for way in ("create", "stream", "stream_helper"):
        summary = result[way]
        assert summary["status"] == "completed", way
        assert calls_of(summary) == CALLS, way
        assert summary["reasoning"].strip() == REASONING, way
        assert len({call["id"] for call in summary["tool_calls"]}) == 3, way
    events = result["stream"]["events"]
    assert events[:2] == ["response.created", "response.in_progress"] and events[-1] == "response.completed"
    assert events.count("response.output_item.done") == events.count("response.output_item.added") == 4
    assert len(fake.requests) == 3
