"""Claude Code (`@anthropic-ai/claude-code`, pinned in
tests/clients/agents/claude) run headless with `claude -p --output-format
json` against the real gateway on loopback, its /v1/messages surface in
front of a scripted raw-text backend that answers like Qwen3
(`<think>…</think>`, `<tool_call>{json}</tool_call>`) and reacts to the
conversation: a text turn, and a `Bash` turn where Claude Code runs
`echo hello` in a temp dir, sends the output back and gets a final answer.

Claude Code runs with a throw-away HOME, an API key sent as `x-api-key`,
no retries, and telemetry, error reports, update checks and other
nonessential traffic off. It falls back to a non-streamed request when a
stream breaks, so every backend request is checked to have been streamed:
a broken stream cannot pass through the fallback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.clients.npm_install import installed_cli

AGENT = Path(__file__).resolve().parent / "agents" / "claude"
API_KEY = "sk-claude-code-test"


def qwen3_agent(body: dict) -> str:
    """What the scripted model writes for this conversation."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        output = messages[-1]["content"].strip()
        return f"<think>\nThe command ran.\n</think>\n\nDone. The command printed: {output}"
    asked = " ".join(message["content"] for message in messages if message["role"] == "user")
    if "echo hello" in asked:
        call = {"name": "Bash", "arguments": {"command": "echo hello", "description": "Print hello"}}
        return f"<think>\nRun it.\n</think>\n\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    return "<think>\nA greeting.\n</think>\n\nHello from parsegate!"


@pytest.fixture(scope="module")
def claude() -> Path:
    """Claude Code, installed from tests/clients/agents/claude's lock file."""
    return installed_cli(AGENT, "claude", "Claude Code")


@pytest.fixture(scope="module")
def claude_gateway(serve, fake_backend_server) -> str:
    _, fake_url = fake_backend_server
    config = {
        "server": {"api_keys": [API_KEY]},
        "models": [
            {
                "name": "qwen3",
                "backend": {"url": f"{fake_url}/v1"},
                "reasoning_parser": "qwen3",
                "tool_call_parser": "qwen25",
            }
        ],
    }
    return serve(create_app(Config.model_validate(config)))


def run_claude(claude: Path, gateway: str, prompt: str, tmp_path: Path) -> dict:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": gateway,  # no /v1: Claude Code adds it
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = [str(claude), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash", "--model", "qwen3"]
    done = subprocess.run(
        command, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return json.loads(done.stdout)


def all_streamed(fake) -> bool:
    return bool(fake.requests) and all(body.get("stream") is True for _, body in fake.requests)


def test_text_turn(claude, claude_gateway, fake, tmp_path):
    fake.answer = qwen3_agent
    result = run_claude(claude, claude_gateway, "Say hello.", tmp_path)
    assert result["is_error"] is False and result["subtype"] == "success"
    assert result["result"] == "\n\nHello from parsegate!"  # the text after </think>, as the model wrote it
    assert all_streamed(fake)
    assert fake.requests[0][1]["messages"][0]["role"] == "system"
    assert not fake.requests[0][1]["messages"][0]["content"].startswith("x-anthropic-billing-header")


def test_bash_turn_runs_echo_hello_and_answers_from_its_output(claude, claude_gateway, fake, tmp_path):
    fake.answer = qwen3_agent
    result = run_claude(
        claude, claude_gateway, "Run the shell command `echo hello` and tell me what it printed.", tmp_path
    )
    assert result["is_error"] is False and result["subtype"] == "success"
    assert result["result"] == "\n\nDone. The command printed: hello"
    assert result["num_turns"] >= 2
    assert all_streamed(fake)
    tool_messages = [message for message in fake.last_body["messages"] if message["role"] == "tool"]
    assert [message["content"].strip() for message in tool_messages] == ["hello"]
    assert tool_messages[0]["tool_call_id"].startswith("toolu_")
