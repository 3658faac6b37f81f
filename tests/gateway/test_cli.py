"""The `parsegate` command, run for real as `python -m gateway`."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from gateway.cli import _arguments, main
from parsers import (
    parse_text,
    reasoning_parser_aliases,
    reasoning_parser_names,
    tool_call_parser_aliases,
    tool_call_parser_names,
)
from tests.conftest import REPO, on_this_checkout
from tests.sdk_clients import openai_client

RAW = (
    "<think>\nThe user wants Paris weather.\n</think>\n\nChecking.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "note": "é ✓"}}\n</tool_call>'
)
PARSED = {
    "reasoning_content": "The user wants Paris weather.",
    "content": "Checking.",
    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "note": "é ✓"}}],
}
QWEN = ["--reasoning-parser", "qwen3", "--tool-call-parser", "qwen25"]


def parsegate(
    *args: str, stdin: str | None = None, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m gateway ARGS` in a fresh process (run in `cwd`, this
    checkout's gateway all the same)."""
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environment(env or {}),
        timeout=60,
    )


def environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without parsegate's variables, this
    checkout first on the import path, and `extra`."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("PARSEGATE_")}
    return {**on_this_checkout(clean), **extra}


def in_process(capsys, monkeypatch, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """The same command run in this process (cheaper): exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = main(list(args))
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def parsed(output: str) -> dict:
    result = json.loads(output)
    for key in ("reasoning_content", "content"):
        result[key] = result[key].strip()
    return result


def test_parsers_json_lists_every_name():
    result = parsegate("parsers", "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "tool_call_parsers": tool_call_parser_names(),
        "reasoning_parsers": reasoning_parser_names(),
        "tool_call_aliases": tool_call_parser_aliases(),
        "reasoning_aliases": reasoning_parser_aliases(),
    }


def test_parsers_json_says_which_name_an_alias_stands_for():
    listing = json.loads(parsegate("parsers", "--json").stdout)
    assert listing["tool_call_aliases"]["openai"] == "gpt-oss"
    assert listing["reasoning_aliases"]["openai_gptoss"] == "gpt-oss"
    assert "openai" in listing["tool_call_parsers"] and "gpt-oss" not in listing["tool_call_aliases"]


def test_parsers_plain_lists_every_name(capsys, monkeypatch):
    listed = in_process(capsys, monkeypatch, "parsers")[1].split()
    assert set(tool_call_parser_names()) | set(reasoning_parser_names()) <= set(listed)


def test_parsers_plain_shows_the_name_an_alias_stands_for(capsys, monkeypatch):
    lines = [line.strip() for line in in_process(capsys, monkeypatch, "parsers")[1].splitlines()]
    tools, reasoning = lines[: lines.index("reasoning parsers:")], lines[lines.index("reasoning parsers:") :]
    assert "llama4_json -> llama3" in tools and "cohere_command3 -> command_r7b" in tools
    assert "nemotron_v3 -> nemotron_3" in reasoning and "gpt-oss" in reasoning


def test_parse_a_file_and_stdin_alike(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(RAW, encoding="utf-8")
    from_file = parsegate("parse", *QWEN, str(raw))
    assert from_file.returncode == 0, from_file.stderr
    assert parsed(from_file.stdout) == PARSED
    assert "é ✓" in from_file.stdout  # printed as text, not \u escapes
    assert parsegate("parse", *QWEN, "-", stdin=RAW).stdout == from_file.stdout


def test_parse_streaming_path_gives_the_same_output(capsys, monkeypatch):
    whole = json.dumps(parse_text(RAW, "qwen3", "qwen25").to_json(), ensure_ascii=False, indent=2) + "\n"
    assert parsegate("parse", *QWEN, "--stream-chunk", "1", stdin=RAW).stdout == whole
    for chunk in ("2", "3", "7"):
        assert in_process(capsys, monkeypatch, "parse", *QWEN, "--stream-chunk", chunk, stdin=RAW)[1] == whole
    code, _, error = in_process(capsys, monkeypatch, "parse", "--stream-chunk", "0", stdin=RAW)
    assert code == 2 and "--stream-chunk" in error


def test_parse_with_one_parser_or_none(capsys, monkeypatch):
    _, output, _ = in_process(capsys, monkeypatch, "parse", "--reasoning-parser", "qwen3", stdin=RAW)
    reasoning_only = json.loads(output)
    assert "<tool_call>" in reasoning_only["content"] and reasoning_only["tool_calls"] == []
    _, output, _ = in_process(capsys, monkeypatch, "parse", stdin=RAW)
    assert json.loads(output) == {"reasoning_content": None, "content": RAW, "tool_calls": []}


def test_parse_reads_a_tools_file(tmp_path, capsys, monkeypatch):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "get_weather"}}]))
    code, output, _ = in_process(capsys, monkeypatch, "parse", *QWEN, "--tools", str(tools), stdin=RAW)
    assert code == 0 and parsed(output) == PARSED
    tools.write_text('{"not": "a list"}')
    code, _, error = in_process(capsys, monkeypatch, "parse", *QWEN, "--tools", str(tools), stdin=RAW)
    assert code == 2 and "--tools" in error


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            '[{"type": "function",\n',
            "not valid JSON: Expecting property name enclosed in double quotes at line 2, column 1",
        ),
        ('{"type": "function"}', "the file must hold a JSON array of OpenAI tools, not a JSON object"),
        (
            '[{"type": "function"}, "get_weather"]',
            "item 1 is a JSON string; the file must hold a JSON array of OpenAI tools",
        ),
        (None, "cannot read the file: No such file or directory"),
    ],
)
def test_a_bad_tools_file_is_named_with_its_flag_and_what_is_wrong(tmp_path, content, problem):
    tools = tmp_path / "bad.json"
    if content is not None:
        tools.write_text(content)
    result = parsegate("parse", *QWEN, "--tools", str(tools), stdin=RAW)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"parsegate parse: error: --tools {tools}: {problem}"


def test_parse_rejects_unknown_parser_names(capsys, monkeypatch):
    result = parsegate("parse", "--tool-call-parser", "no-such-parser", stdin=RAW)
    assert result.returncode == 2
    assert "no-such-parser" in result.stderr and "allowed: " + ", ".join(tool_call_parser_names()) in result.stderr
    assert "did you mean" not in result.stderr  # nothing is close
    code, _, error = in_process(capsys, monkeypatch, "parse", "--reasoning-parser", "nope", stdin=RAW)
    assert code == 2 and "allowed: " + ", ".join(reasoning_parser_names()) in error


def test_a_misspelt_parser_name_gets_the_closest_one():
    result = parsegate("parse", "--tool-call-parser", "hermess", stdin=RAW)
    assert result.returncode == 2
    assert "--tool-call-parser: unknown parser 'hermess' (did you mean 'hermes'?); allowed: " in result.stderr
    result = parsegate("parse", "--reasoning-parser", "qwen_3", stdin=RAW)
    assert "unknown parser 'qwen_3' (did you mean 'qwen3'?)" in result.stderr


def test_version_is_the_installed_package_version():
    result = parsegate("--version")
    assert result.returncode == 0
    assert result.stdout == f"parsegate {version('parsegate')}\n"


def test_every_command_and_flag_has_a_help_text():
    parser, commands = _arguments()
    assert parser.description and commands
    for name, command in commands.items():
        assert command.description, name
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest}"
        shown = parsegate(name, "--help")
        assert shown.returncode == 0 and command.description.split()[0] in shown.stdout


def test_the_help_tells_what_parse_and_render_read():
    parse_help = " ".join(parsegate("parse", "--help").stdout.split())
    assert "--tools FILE.json a JSON file with the request's OpenAI tools array" in parse_help
    assert "--tool-call-parser NAME tool-call parser (`parsegate parsers`" in parse_help
    assert "--reasoning-parser NAME reasoning parser (`parsegate parsers`" in parse_help
    render_help = " ".join(parsegate("render", "--help").stdout.split())
    assert "Read an OpenAI chat completion request (JSON) on stdin" in render_help
    top = " ".join(parsegate("--help").stdout.split())
    for line in ("serve run the gateway", "parse parse one raw model output", "render print the prompt", "--version"):
        assert line in top


CONFIG_ERRORS = [
    (
        "models:\n  - name: m\n    backend: {url: 'http://127.0.0.1:9/v1'}\n    reasoning_parser: qwen4\n",
        [
            "models[0].reasoning_parser",
            "unknown reasoning parser 'qwen4' (did you mean 'qwen3'?)",
            *reasoning_parser_names(),
        ],
    ),
    (
        "models:\n  - name: m\n    backend: {url: 'http://127.0.0.1:9/v1'}\n    tool_call_parser: qwen3_cod\n",
        ["models[0].tool_call_parser", "(did you mean 'qwen3_coder'?)", *tool_call_parser_names()],
    ),
    (
        "models:\n  - name: m\n    backend: {url: 'http://127.0.0.1:9/v1', modle: x}\n",
        ["models[0].backend", "unknown key 'modle' (did you mean 'model'?)", "url, demo, model, api_key, timeout"],
    ),
    ("server: {port: many}\nmodels:\n  - {name: m, backend: {demo: true}}\n", ["server.port"]),
    ("models:\n  - {name: m, backend: {demo: true}}\n  - {name: m, backend: {demo: true}}\n", ["duplicate", "'m'"]),
    ("models:\n  - {name: m, backend: {demo: true, url: 'http://x'}}\n", ["exactly one of 'url'"]),
    (
        "models:\n  - {name: m, backend: {url: 'http://x', api_key: '${PARSEGATE_UNSET_VAR}'}}\n",
        ["models[0].backend.api_key", "PARSEGATE_UNSET_VAR"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), CONFIG_ERRORS)
def test_serve_rejects_bad_config_with_one_clear_line(tmp_path, capsys, monkeypatch, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, _, error = in_process(capsys, monkeypatch, "serve", "--config", str(path))
    assert code == 2
    assert error.count("\n") == 1 and error.startswith(f"parsegate: {path}: ")
    for fragment in expected:
        assert fragment in error


def test_a_yaml_syntax_error_names_the_file_line_and_column_and_shows_the_place(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bad.yaml"
    path.write_text("server:\n  port: 8080\n models:\n  - name: m\n")
    code, _, error = in_process(capsys, monkeypatch, "serve", "--config", str(path))
    assert code == 2
    assert "<unicode string>" not in error
    assert error.splitlines() == [
        f"parsegate: {path}: not valid YAML at line 3, column 2: expected <block end>, but found '<block mapping start>'",
        "  while parsing a block mapping",
        f'    in "{path}", line 1, column 1:',
        "      server:",
        "      ^",
        "  expected <block end>, but found '<block mapping start>'",
        f'    in "{path}", line 3, column 2:',
        "       models:",
        "       ^",  # under the `m`, the column the first line names
    ]


def test_serve_config_error_exits_2_from_the_command_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG_ERRORS[0][0])
    result = parsegate("serve", "--config", str(path))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "models[0].reasoning_parser" in result.stderr


def test_serve_reads_parsegate_config_from_the_environment(tmp_path, capsys, monkeypatch):
    path = tmp_path / "env.yaml"
    path.write_text("models: []\n")
    monkeypatch.setenv("PARSEGATE_CONFIG", str(path))
    code, _, error = in_process(capsys, monkeypatch, "serve")
    assert code == 2 and f"{path}: models: " in error


def test_serve_missing_config_file_says_how_to_pass_one(tmp_path):
    result = parsegate("serve", "--config", "/nonexistent/parsegate.yaml", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "parsegate: /nonexistent/parsegate.yaml: cannot read config file: No such file or directory "
        "(named by --config); pass your config file with --config PATH or $PARSEGATE_CONFIG=PATH, "
        "or neither to serve the built-in demo\n"
    )
    result = parsegate("serve", cwd=tmp_path, env={"PARSEGATE_CONFIG": "absent.yaml"})
    assert result.returncode == 2
    assert "absent.yaml: cannot read config file" in result.stderr
    assert "(named by $PARSEGATE_CONFIG); pass your config file with --config PATH" in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def started(*args: str, cwd: Path) -> tuple[subprocess.Popen, list[str]]:
    """`parsegate serve ARGS` running in `cwd`, and its log lines up to uvicorn's "running" line."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", *args],
        cwd=cwd,
        env=environment({}),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    for line in server.stderr:  # uvicorn logs to stderr; this blocks until it is up
        lines.append(line)
        if "Uvicorn running on" in line:
            break
    return server, lines


def test_serve_outside_the_repository_serves_the_demo_and_says_so(tmp_path):
    port = _free_port()
    server, lines = started("--port", str(port), cwd=tmp_path)  # no config.yaml in tmp_path
    try:
        assert server.poll() is None, "".join(lines)
        assert lines[0] == (
            "WARNING:  no ./config.yaml here: serving the built-in demo model; "
            "pass your config file with --config PATH or $PARSEGATE_CONFIG=PATH\n"
        )
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()["data"]
        assert [(model["id"], model["owned_by"]) for model in models] == [("demo", "parsegate-demo")]
        client = openai_client(f"http://127.0.0.1:{port}")
        reply = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content and reply.choices[0].message.reasoning_content
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_serve_on_a_port_in_use_says_so_and_exits_non_zero(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = parsegate("serve", "--port", str(port), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"parsegate: cannot listen on 127.0.0.1:{port}: the port is already in use (another process listens "
        "there); stop it, or serve on another port with --port, server.port or PARSEGATE_SERVER__PORT"
    )
    assert "startup complete" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was opened


@pytest.mark.parametrize("config", [[], ["--config", str(REPO / "config.yaml")]], ids=["built-in", "shipped"])
def test_the_demo_keeps_its_responses_in_memory_and_leaves_no_file(tmp_path, config):
    port = _free_port()
    server, lines = started("--port", str(port), *config, cwd=tmp_path)
    try:
        assert server.poll() is None, "".join(lines)
        base = f"http://127.0.0.1:{port}/v1"
        first = httpx.post(f"{base}/responses", json={"model": "demo", "input": "hi"}, timeout=30).json()
        assert httpx.get(f"{base}/responses/{first['id']}").json()["id"] == first["id"]  # stored
        follow = {"model": "demo", "input": "and then?", "previous_response_id": first["id"]}
        assert httpx.post(f"{base}/responses", json=follow, timeout=30).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert list(tmp_path.iterdir()) == []


def test_the_demo_line_follows_the_log_format(tmp_path):
    server, lines = started("--port", str(_free_port()), "--log-format", "json", cwd=tmp_path)
    try:
        first = json.loads(lines[0])
        assert (first["level"], first["logger"]) == ("WARNING", "parsegate.cli")
        assert first["message"].startswith("no ./config.yaml here: serving the built-in demo model; pass")
    finally:
        server.terminate()
        server.wait(timeout=10)


def store_in(folder: Path) -> dict[str, str]:
    """The environment of a gateway run in the checkout on its shipped
    config, its Responses store file in `folder` (not the checkout's
    `parsegate-store.db`)."""
    return environment({"PARSEGATE_STORE__URL": str(folder / "parsegate-store.db")})


@pytest.mark.slow  # 7 s
def test_serve_runs_the_shipped_config_with_no_flags_but_port(tmp_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--port", str(port)],
        cwd=REPO,
        env=store_in(tmp_path),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        for line in server.stderr:  # uvicorn logs to stderr; this blocks until it is up
            if "Uvicorn running on" in line:
                break
        assert server.poll() is None, "the server exited"
        assert httpx.get(f"http://127.0.0.1:{port}/health").json() == {"status": "ok"}
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()["data"]
        assert models[0]["owned_by"] == "parsegate-demo"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.slow  # 17 s
def test_serve_with_workers_starts_them_all_and_answers(tmp_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--port", str(port), "--workers", "2"],
        cwd=REPO,
        env=store_in(tmp_path),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        started = 0
        for line in server.stderr:  # each worker logs its startup; this blocks until both are up
            started += "Application startup complete" in line
            if started == 2:
                break
        assert server.poll() is None, "the server exited"
        client = openai_client(f"http://127.0.0.1:{port}")
        reply = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content
        assert reply.choices[0].message.reasoning_content
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.mark.parametrize("workers", ["0", "-1", "two"])
def test_serve_rejects_a_worker_count_below_one(capsys, monkeypatch, workers):
    code, _, error = in_process(capsys, monkeypatch, "serve", "--workers", workers)
    assert code == 2 and "--workers" in error
