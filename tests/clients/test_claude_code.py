"""Claude Code (`@anthropic-ai/claude-code`, pinned in
tests/clients/agents/claude) run headless with `claude -p --output-format
json` against the real gateway on loopback, its /v1/messages surface in
front of a scripted raw-text backend that answers like Qwen3
(`<think>…</think>`, `<tool_call>{json}</tool_call>`) and reacts to the
conversation: a text turn, and a `Bash` turn where Claude Code runs
`echo hello` in a temp dir, sends the output back and gets a final answer.
The rows of issue 44: reading a PDF and a PNG the test writes (a
`document` and an `image` block in the tool result), ToolSearch loading a
deferred tool (`defer_loading`, `tool_reference`), and a 60-round session
with Claude Code's auto-compaction, the image and the PDF, recorded
(tests/clients/agent_recorder.py) to have no failed request.

Claude Code runs with a throw-away HOME, an API key sent as `x-api-key`,
no retries, and telemetry, error reports, update checks and other
nonessential traffic off. It falls back to a non-streamed request when a
stream breaks, so every backend request is checked to have been streamed:
a broken stream cannot pass through the fallback."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.clients.agent_files import pdf, png
from tests.clients.agent_recorder import Recorder
from tests.clients.agent_rounds import Rounds
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


def run_claude(
    claude: Path,
    gateway: str,
    prompt: str,
    tmp_path: Path,
    tools: str = "Bash",
    files: dict[str, bytes] | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 300,
) -> dict:
    """`claude -p` in a fresh work dir holding `files`, allowed `tools`
    (comma-separated), with `env` added; its JSON result."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    for name, data in (files or {}).items():
        (work / name).write_bytes(data)
    environment = {
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
        **(env or {}),
    }
    command = [str(claude), "-p", prompt, "--output-format", "json", "--allowedTools", tools, "--model", "qwen3"]
    done = subprocess.run(
        command, cwd=work, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
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


def recorded_gateway(serve, backend_url: str, **model) -> tuple[str, Recorder]:
    """A gateway whose exchanges are recorded, serving `qwen3` (with
    `model`'s further fields)."""
    qwen3 = {"name": "qwen3", "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3"}
    config = {"server": {"api_keys": [API_KEY]}, "models": [{**qwen3, "tool_call_parser": "qwen25", **model}]}
    recorder = Recorder(create_app(Config.model_validate(config)))
    return serve(recorder), recorder


def tool_call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def reader(path: Path) -> Callable[[dict], str]:
    """A model that reads `path` with Read, then says what the tool result
    told it in words (the last line), or that it saw an image."""

    def answer(body: dict) -> str:
        messages = body["messages"]
        if messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
            return "<think>\nAn image.\n</think>\n\nI see the image."
        if messages[-1]["role"] == "tool":
            said = messages[-1]["content"].strip().splitlines()[-1]
            return f"<think>\nRead.\n</think>\n\nIt says: {said}"
        return "<think>\nRead it.\n</think>\n\n" + tool_call("Read", {"file_path": str(path)})

    return answer


def claude_requests(recorder: Recorder) -> list[dict]:
    return [exchange.body for exchange in recorder.posts("/v1/messages") if isinstance(exchange.body, dict)]


def test_reading_a_pdf_gives_the_model_its_text(claude, serve, fake_backend_server, fake, tmp_path):
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1])
    document = pdf("The parsegate PDF says hello")
    fake.answer = reader(tmp_path / "work" / "notes.pdf")
    result = run_claude(claude, gateway, "Read notes.pdf.", tmp_path, tools="Read", files={"notes.pdf": document})
    assert result["is_error"] is False and result["subtype"] == "success"
    assert result["result"] == "\n\nIt says: The parsegate PDF says hello"
    sent = claude_requests(recorder)[-1]["messages"][-1]["content"][0]  # Claude Code's tool_result
    (block,) = [block for block in sent["content"] if block["type"] == "document"]
    assert block["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(block["source"]["data"]) == document
    assert all_streamed(fake) and recorder.failures() == []


def test_reading_a_png_shows_the_image_to_a_model_that_takes_images(claude, serve, fake_backend_server, fake, tmp_path):
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], images=True)
    picture = png(4, 4, (0, 128, 255))
    fake.answer = reader(tmp_path / "work" / "blue.png")
    result = run_claude(claude, gateway, "Look at blue.png.", tmp_path, tools="Read", files={"blue.png": picture})
    assert result["is_error"] is False and result["result"] == "\n\nI see the image."
    sent = claude_requests(recorder)[-1]["messages"][-1]["content"][0]
    assert [block["type"] for block in sent["content"]] == ["image"]  # was a 200 and an empty tool message
    messages = fake.last_body["messages"]
    assert [message["role"] for message in messages][-3:] == ["assistant", "tool", "user"]
    assert "image/png image" in messages[-2]["content"]
    assert (
        messages[-1]["content"][-1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(picture).decode()
    )
    assert all_streamed(fake) and recorder.failures() == []


def tool_searcher(body: dict) -> str:
    """A model that loads the deferred NotebookEdit through ToolSearch, then
    says so once its definition is among the tools."""
    offered = [tool["function"]["name"] for tool in body.get("tools", ())]
    if "NotebookEdit" in offered:
        return "<think>\nLoaded.\n</think>\n\nNotebookEdit is ready."
    return "<think>\nFind it.\n</think>\n\n" + tool_call(
        "ToolSearch", {"query": "select:NotebookEdit", "max_results": 5}
    )


def test_tool_search_loads_a_deferred_tool_for_the_next_turn(claude, serve, fake_backend_server, fake, tmp_path):
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1])
    fake.answer = tool_searcher
    result = run_claude(claude, gateway, "Load the notebook editing tool.", tmp_path, tools="ToolSearch")
    assert result["is_error"] is False and result["result"] == "\n\nNotebookEdit is ready."
    first, second = claude_requests(recorder)  # no 400 and no retry without the beta
    deferred = [tool["name"] for tool in second["tools"] if tool.get("defer_loading")]
    assert "NotebookEdit" in deferred
    (reference,) = second["messages"][-1]["content"][0]["content"]
    assert reference == {"type": "tool_reference", "tool_name": "NotebookEdit"}
    offered = [[tool["function"] for tool in body["tools"]] for _, body in fake.requests]
    assert "NotebookEdit" not in [tool["name"] for tool in offered[0]]
    (definition,) = [tool for tool in offered[1] if tool["name"] == "NotebookEdit"]
    (sent,) = [tool for tool in second["tools"] if tool["name"] == "NotebookEdit"]
    assert definition["description"] == sent["description"]
    assert set(definition["parameters"]["properties"]) == set(sent["input_schema"]["properties"])
    assert [tool["name"] for tool in first["tools"] if tool.get("defer_loading")] == ["DeferredToolPlaceholder"]
    assert not any(tool["name"] == "DeferredToolPlaceholder" for tools in offered for tool in tools)
    assert fake.last_body["messages"][-1]["content"] == "Tool NotebookEdit loaded: it is among the tools now."
    assert all_streamed(fake) and recorder.failures() == []


COMPACTING = "Respond with TEXT ONLY"  # in the prompt of Claude Code 2.1.337's summarisation turn (auto-compact)


@pytest.mark.slow  # 15 s
def test_a_60_round_session_with_compaction_an_image_and_a_pdf_has_no_failed_request(
    claude, serve, fake_backend_server, fake, tmp_path
):
    """One `claude -p` whose model asks for 60 tool round trips: shell
    commands, a PNG and a PDF read, and Claude Code's own auto-compaction
    (told the window by CLAUDE_CODE_MAX_CONTEXT_TOKENS) every ten rounds or so."""
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], images=True)
    picture, document = png(2, 2, (10, 0, 245)), pdf("Round thirty of the parsegate session")
    files = {"round_10.png": picture, "round_30.pdf": document}

    def call_for(number: int) -> tuple[str, dict]:
        for name in files:
            if name.startswith(f"round_{number}."):
                return "Read", {"file_path": str(tmp_path / "work" / name)}
        return "Bash", {"command": f"echo round {number} done", "description": f"Round {number}"}

    summary = "<analysis>Counting.</analysis>\n<summary>ROUNDS DONE {done}</summary>"
    rounds = Rounds(fake, 60, call_for, lambda text: COMPACTING in text, summary, base=5000, per_result=8000)
    result = run_claude(
        claude,
        gateway,
        "Work through the 60 rounds.",
        tmp_path,
        tools="Bash,Read",
        files=files,
        env={"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "100000"},  # the window of a model Claude Code does not know
        timeout=600,
    )
    assert result["is_error"] is False and result["result"] == "\n\nAll 60 rounds done."
    assert rounds.summaries >= 4
    seen = [json.dumps(message["content"]) for _, body in fake.requests for message in body["messages"]]
    assert any(base64.b64encode(picture).decode() in content for content in seen)
    assert any("Round thirty of the parsegate session" in content for content in seen)
    assert len(fake.requests) == 60 + 1 + rounds.summaries  # each round, the answer, each summary: no retry
    assert all_streamed(fake) and recorder.failures() == []
