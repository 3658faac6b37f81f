"""Codex CLI (`@openai/codex`, pinned in tests/clients/agents) run headless
with `codex exec --json` against the real gateway on loopback, its
/v1/responses surface in front of a scripted raw-text backend that answers
like Qwen3 (`<think>…</think>`, `<tool_call>{json}</tool_call>`) and reacts
to the conversation: a text turn, an `exec_command` turn that runs
`echo hello` and answers from its output, and an `apply_patch` custom-tool
turn that creates a file. With `supports_websockets = true`, Codex speaks
the Responses WebSocket transport first (gateway/api/responses_socket.py):
a tool turn over one connection, and the 426 it falls back to HTTP on at
once when the transport is off.

Codex runs with a throw-away CODEX_HOME and HOME, a custom model provider
(`wire_api = "responses"`), no retries (so failures show), and update
checks and analytics off. It offers apply_patch as a custom tool only to
models it knows, hence `gpt-5.5` for that turn."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.app import create_app
from gateway.ops.config import Config
from tests.clients.npm_install import installed_cli

AGENTS = Path(__file__).resolve().parent / "agents"
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from parsegate\n*** End Patch\n"
CONFIG = """\
model_provider = "parsegate"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.parsegate]
name = "parsegate under test"
base_url = "{base_url}"
wire_api = "responses"
env_key = "PARSEGATE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 60000
"""


def call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def qwen3_agent(body: dict) -> str:
    """What the scripted model writes for this conversation."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        output = messages[-1]["content"]
        last_line = output.strip().splitlines()[-1] if output.strip() else ""
        return f"<think>\nThe tool ran.\n</think>\n\nDone. The tool said: {last_line}"
    asked = " ".join(message["content"] for message in messages if message["role"] == "user")
    if "apply_patch" in asked:
        return "<think>\nA new file, by patch.\n</think>\n\n" + call("apply_patch", {"input": PATCH})
    if "echo hello" in asked:
        return "<think>\nRun it.\n</think>\n\n" + call("exec_command", {"cmd": "echo hello"})
    return "<think>\nA greeting.\n</think>\n\nHello from parsegate!"


@pytest.fixture(scope="module")
def codex() -> Path:
    """The Codex CLI, installed from tests/clients/agents's lock file."""
    return installed_cli(AGENTS, "codex", "Codex CLI")


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    """A gateway serving a Qwen3-style model under Codex's names for it."""
    _, backend_url = fake_backend_server
    qwen3 = {"backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}
    models = [{"name": name, **qwen3} for name in ("parsegate-qwen3", "gpt-5.5")]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture
def agent(fake):
    fake.answer = qwen3_agent
    return fake


class Transports:
    """ASGI wrapper: counts the WebSocket upgrades and the POSTs an app gets."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.upgrades = 0
        self.posts = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.upgrades += scope["type"] == "websocket"
        self.posts += scope["type"] == "http" and scope["method"] == "POST"
        await self.app(scope, receive, send)


def counted_gateway(serve, backend_url: str, server: dict) -> tuple[str, Transports]:
    qwen3 = {"backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}
    app = Transports(
        create_app(Config.model_validate({"server": server, "models": [{"name": "parsegate-qwen3", **qwen3}]}))
    )
    return serve(app), app


def run_codex(
    codex: Path, gateway: str, tmp_path: Path, prompt: str, model: str, websockets: bool = False
) -> list[dict]:
    """`codex exec --json` in a fresh work dir; its JSONL events. With
    `websockets`, the provider says `supports_websockets = true`."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".codex").mkdir(parents=True)
    work.mkdir()
    config = CONFIG.format(base_url=f"{gateway}/v1") + ("supports_websockets = true\n" if websockets else "")
    (home / ".codex" / "config.toml").write_text(config)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "PARSEGATE_API_KEY": "unused",
    }
    command = [str(codex), "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write"]
    done = subprocess.run(
        [*command, "-m", model, prompt],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, f"{done.stderr}\n{done.stdout}"
    assert events[-1]["type"] == "turn.completed", done.stdout
    return events


def completed(events: list[dict], kind: str) -> list[dict]:
    return [event["item"] for event in events if event["type"] == "item.completed" and event["item"]["type"] == kind]


def test_text_turn(codex, gateway, agent, tmp_path):
    events = run_codex(codex, gateway, tmp_path, "Say hello.", "parsegate-qwen3")
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Hello from parsegate!"]
    assert [item["text"].strip() for item in completed(events, "reasoning")] == ["A greeting."]
    assert not any(event["type"] == "turn.failed" for event in events)


def test_shell_tool_turn(codex, gateway, agent, tmp_path):
    prompt = "Run the shell command `echo hello` and tell me what it printed."
    events = run_codex(codex, gateway, tmp_path, prompt, "parsegate-qwen3")
    (command,) = completed(events, "command_execution")
    assert "echo hello" in command["command"]
    assert (command["aggregated_output"].strip(), command["exit_code"]) == ("hello", 0)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Done. The tool said: hello"]
    assert len(agent.requests) == 2
    assert agent.requests[1][1]["messages"][-1]["role"] == "tool"


def test_apply_patch_custom_tool_turn(codex, gateway, agent, tmp_path):
    prompt = "Create the file hello.txt using apply_patch."
    events = run_codex(codex, gateway, tmp_path, prompt, "gpt-5.5")
    offered = [tool["function"]["name"] for tool in agent.requests[0][1]["tools"]]
    assert "apply_patch" in offered
    assert completed(events, "file_change")
    assert (tmp_path / "work" / "hello.txt").read_text() == "hello from parsegate\n"
    assert len(completed(events, "agent_message")) == 1


def test_a_tool_turn_over_the_websocket_keeps_one_connection(codex, serve, fake_backend_server, agent, tmp_path):
    gateway, transports = counted_gateway(serve, fake_backend_server[1], {})
    prompt = "Run the shell command `echo hello` and tell me what it printed."
    events = run_codex(codex, gateway, tmp_path, prompt, "parsegate-qwen3", websockets=True)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Done. The tool said: hello"]
    assert (transports.upgrades, transports.posts) == (1, 0)  # a warm-up and two turns on one connection
    assert len(agent.requests) == 2  # the warm-up does not run the model
    history = agent.requests[1][1]["messages"]  # Codex sent only the tool's output: the connection kept the rest
    assert [message["role"] for message in history][-3:] == ["user", "assistant", "tool"]
    assert history[-1]["content"].strip().endswith("hello")


def test_with_the_transport_off_codex_falls_back_to_http_at_once(codex, serve, fake_backend_server, agent, tmp_path):
    gateway, transports = counted_gateway(serve, fake_backend_server[1], {"responses_websocket": False})
    events = run_codex(codex, gateway, tmp_path, "Say hello.", "parsegate-qwen3", websockets=True)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Hello from parsegate!"]
    assert (transports.upgrades, transports.posts) == (1, 1)  # a 403 got 7 upgrades, 6.2 s, before HTTP
