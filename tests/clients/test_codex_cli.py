"""Codex CLI (`@openai/codex`, pinned in tests/clients/agents) run headless
with `codex exec --json` against the real gateway on loopback, its
/v1/responses surface in front of a scripted raw-text backend that answers
like Qwen3 (`<think>…</think>`, `<tool_call>{json}</tool_call>`) and reacts
to the conversation: a text turn, an `exec_command` turn that runs
`echo hello` and answers from its output, and an `apply_patch` custom-tool
turn that creates a file. With `supports_websockets = true`, Codex speaks
the Responses WebSocket transport first (gateway/api/responses_socket.py):
a tool turn over one connection, and the 426 it falls back to HTTP on at
once when the transport is off. The rows of issue 44: the built-in
`openai` provider (`openai_base_url`) whose auto-compaction sends a
`compaction_trigger` (over the WebSocket, and over HTTP with the transport
off), `view_image` on a PNG the test writes, and a 60-round session with
both, recorded (tests/clients/agent_recorder.py) to have no failed request.

Codex runs with a throw-away CODEX_HOME and HOME, a custom model provider
(`wire_api = "responses"`), no retries (so failures show), and update
checks and analytics off. It offers apply_patch as a custom tool only to
models it knows, hence `gpt-5.5` for that turn."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.clients.agent_files import png
from tests.clients.agent_recorder import Recorder
from tests.clients.agent_rounds import Rounds
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
BUILT_IN = """\
openai_base_url = "{base_url}"
check_for_update_on_startup = false
model_auto_compact_token_limit = {limit}

[analytics]
enabled = false
"""
COMPACTION_PROMPT = "Summarise the work so far: the conversation is being compacted."


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


def recorded_gateway(serve, backend_url: str, server: dict | None = None, **model) -> tuple[str, Recorder]:
    """A gateway whose exchanges are recorded, serving `parsegate-qwen3`
    (with `model`'s further fields) and asking for summaries in
    COMPACTION_PROMPT's words."""
    qwen3 = {"backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}
    config = {
        "server": {"compaction_prompt": COMPACTION_PROMPT, **(server or {})},
        "models": [{"name": "parsegate-qwen3", **qwen3, **model}],
    }
    recorder = Recorder(create_app(Config.model_validate(config)))
    return serve(recorder), recorder


def run_codex(
    codex: Path,
    gateway: str,
    tmp_path: Path,
    prompt: str,
    model: str,
    websockets: bool = False,
    config: str | None = None,
    files: dict[str, bytes] | None = None,
    timeout: int = 180,
) -> list[dict]:
    """`codex exec --json` in a fresh work dir holding `files`; its JSONL
    events. With `websockets`, the provider says `supports_websockets =
    true`; `config` replaces the config.toml that names the provider."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".codex").mkdir(parents=True)
    work.mkdir()
    for name, data in (files or {}).items():
        (work / name).write_bytes(data)
    if config is None:
        config = CONFIG.format(base_url=f"{gateway}/v1") + ("supports_websockets = true\n" if websockets else "")
    (home / ".codex" / "config.toml").write_text(config)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "PARSEGATE_API_KEY": "unused",
        "CODEX_API_KEY": "unused",  # the built-in provider's key in `codex exec`
    }
    command = [str(codex), "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "workspace-write"]
    done = subprocess.run(
        [*command, "-m", model, prompt],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
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
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1])
    prompt = "Run the shell command `echo hello` and tell me what it printed."
    events = run_codex(codex, gateway, tmp_path, prompt, "parsegate-qwen3", websockets=True)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Done. The tool said: hello"]
    assert (recorder.upgrades, len(recorder.posts("/v1/responses"))) == (
        1,
        0,
    )  # a warm-up and two turns, one connection
    assert len(agent.requests) == 2  # the warm-up does not run the model
    history = agent.requests[1][1]["messages"]  # Codex sent only the tool's output: the connection kept the rest
    assert [message["role"] for message in history][-3:] == ["user", "assistant", "tool"]
    assert history[-1]["content"].strip().endswith("hello")


def test_with_the_transport_off_codex_falls_back_to_http_at_once(codex, serve, fake_backend_server, agent, tmp_path):
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], {"responses_websocket": False})
    events = run_codex(codex, gateway, tmp_path, "Say hello.", "parsegate-qwen3", websockets=True)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["Hello from parsegate!"]
    assert (recorder.upgrades, len(recorder.posts("/v1/responses"))) == (1, 1)  # a 403 got 7 upgrades, 6.2 s


def echo_round(number: int) -> tuple[str, dict]:
    return "exec_command", {"cmd": f"echo round {number} done"}


def compaction_triggers(recorder: Recorder) -> list:
    return [
        exchange
        for exchange in recorder.exchanges
        if isinstance(exchange.body, dict)
        and (exchange.body.get("input") or [{}])[-1].get("type") == "compaction_trigger"
    ]


@pytest.mark.parametrize("transport", ["websocket", "http"])
def test_auto_compaction_through_the_built_in_provider_completes_the_run(
    codex, serve, fake_backend_server, fake, tmp_path, transport
):
    """Codex with its built-in `openai` provider (`openai_base_url`) compacts
    remotely: a `compaction_trigger` over the WebSocket it opens first, or
    over HTTP where the gateway turns the transport off."""
    server = {} if transport == "websocket" else {"responses_websocket": False}
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], server)
    rounds = Rounds(fake, 4, echo_round, lambda text: COMPACTION_PROMPT in text)
    config = BUILT_IN.format(base_url=f"{gateway}/v1", limit=4000)
    events = run_codex(codex, gateway, tmp_path, "Work through the four rounds.", "parsegate-qwen3", config=config)
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["All 4 rounds done."]
    outputs = [item["aggregated_output"].strip() for item in completed(events, "command_execution")]
    assert outputs == [f"round {number} done" for number in range(4)]
    assert rounds.summaries >= 1
    summarised = [body for _, body in fake.requests if body["messages"][-1]["content"] == COMPACTION_PROMPT]
    assert len(summarised) == rounds.summaries and not any(body.get("tools") for body in summarised)
    expanded = [  # the compaction item Codex kept, expanded in its next request
        message["content"]
        for _, body in fake.requests
        for message in body["messages"]
        if message["role"] == "user" and str(message["content"]).startswith("A summary of the conversation")
    ]
    assert expanded and all("ROUNDS DONE" in content for content in expanded)
    triggers = compaction_triggers(recorder)
    assert len(triggers) == rounds.summaries
    if transport == "websocket":
        assert recorder.posts("/v1/responses") == [] and recorder.failures() == []
        for trigger in triggers:
            (done,) = [event for event in trigger.events if event["type"] == "response.output_item.done"]
            assert done["item"]["type"] == "compaction" and done["item"]["encrypted_content"].startswith("pgc1.")
    else:
        assert all(exchange.status == 200 for exchange in recorder.posts("/v1/responses"))
        assert [exchange.method for exchange in triggers] == ["POST"] * len(triggers)


def view_image_agent(body: dict) -> str:
    """Looks at dot.png, then says what it saw once the image is in the conversation."""
    messages = body["messages"]
    if any(message["role"] == "tool" for message in messages):
        return "<think>\nA red square.\n</think>\n\nI see a red square."
    return "<think>\nLook.\n</think>\n\n" + call("view_image", {"path": "dot.png"})


def test_view_image_shows_the_png_to_a_model_that_takes_images(codex, serve, fake_backend_server, fake, tmp_path):
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], images=True)
    fake.answer = view_image_agent
    picture = png(4, 4, (255, 0, 0))
    events = run_codex(
        codex, gateway, tmp_path, "What is in dot.png?", "parsegate-qwen3", websockets=True, files={"dot.png": picture}
    )
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["I see a red square."]
    assert "view_image" in [tool["function"]["name"] for tool in fake.requests[0][1]["tools"]]
    (sent,) = [turn for turn in recorder.turns() if turn.body["input"][-1:][0].get("type") == "function_call_output"]
    assert sent.body["input"][-1]["output"][0]["type"] == "input_image"  # what Codex sends, and was refused before
    messages = fake.last_body["messages"]
    assert [message["role"] for message in messages][-3:] == ["assistant", "tool", "user"]
    assert "image/png image" in messages[-2]["content"]
    image = messages[-1]["content"][-1]["image_url"]["url"]
    assert image == "data:image/png;base64," + base64.b64encode(picture).decode()
    assert recorder.failures() == []


@pytest.mark.slow  # 17 to 20 s
def test_a_60_round_session_with_compaction_and_images_has_no_failed_request(
    codex, serve, fake_backend_server, fake, tmp_path
):
    """One `codex exec` through the built-in provider whose model asks for
    60 tool round trips: shell commands, `view_image` twice, and Codex's
    auto-compaction every ten rounds or so, all on one WebSocket."""
    gateway, recorder = recorded_gateway(serve, fake_backend_server[1], images=True)
    pictures = {number: png(2, 2, (number, 0, 255 - number)) for number in (10, 40)}

    def call_for(number: int) -> tuple[str, dict]:
        return ("view_image", {"path": f"round_{number}.png"}) if number in pictures else echo_round(number)

    rounds = Rounds(fake, 60, call_for, lambda text: COMPACTION_PROMPT in text)
    config = BUILT_IN.format(base_url=f"{gateway}/v1", limit=12000)
    files = {f"round_{number}.png": picture for number, picture in pictures.items()}
    events = run_codex(
        codex, gateway, tmp_path, "Work through the 60 rounds.", "parsegate-qwen3", config=config, files=files
    )
    assert [item["text"].strip() for item in completed(events, "agent_message")] == ["All 60 rounds done."]
    outputs = [item["aggregated_output"].strip() for item in completed(events, "command_execution")]
    assert outputs == [f"round {number} done" for number in range(60) if number not in pictures]
    assert rounds.summaries >= 4
    shown = [
        part["image_url"]["url"]
        for _, body in fake.requests
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]
    for picture in pictures.values():
        assert "data:image/png;base64," + base64.b64encode(picture).decode() in shown
    assert len(fake.requests) == 60 + 1 + rounds.summaries  # each round, the answer, each summary: no retry
    assert recorder.upgrades == 1 and recorder.posts("/v1/responses") == []
    assert recorder.failures() == []
