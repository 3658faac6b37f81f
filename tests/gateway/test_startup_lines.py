"""What `parsegate serve` logs at start-up, from a real subprocess: one line
per model (URLs with credentials masked, server kind, mode, parsers), a
warning for each entry that names one parser and leaves the other silently
off, and one for a listen address beyond loopback with no API keys; the
same lines again for the new config after a SIGHUP reload, none after a
refused one."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest

from tests.gateway.test_gateway_lifecycle import wait_until

TEMPLATE = str(Path(__file__).parent.parent / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja")
BACKEND = "http://127.0.0.1:9/v1"  # never called at start-up
URL_PASSWORD, URL_KEY, BACKEND_KEY = "pw-in-the-url-1", "key-in-the-query-1", "sk-startup-backend-1"
UNGUARDED = "with no server.api_keys: anyone who reaches this address can use every model"
DEMO = {"name": "demo", "backend": {"demo": True}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}


def lines(gateway, level: str) -> list[str]:
    """The gateway's `level` lines, without the level prefix, up to the point it listens."""
    found = []
    for line in gateway.log:
        if "Uvicorn running on" in line:
            break
        if line.startswith(f"{level}:"):
            found.append(line.partition(":")[2].strip())
    return found


def test_one_line_per_model_with_its_urls_server_mode_and_parsers(gateway_process):
    models = [
        {
            "name": "qwen3",
            "backend": {
                "url": f"http://ops:{URL_PASSWORD}@127.0.0.1:9/v1?api-key={URL_KEY}",
                "server": "vllm",
                "api_key": BACKEND_KEY,
            },
            "reasoning_parser": "qwen3",
            "tool_call_parser": "qwen25",
        },
        {
            "name": "pair",
            "backend": {"urls": [BACKEND, "http://127.0.0.1:10/v1"]},
            "reasoning_parser": "none",
            "tool_call_parser": "qwen25",
        },
        {
            "name": "templated",
            "backend": {"url": BACKEND, "model": "Qwen/Qwen3-0.6B", "server": "llamacpp"},
            "chat_template": TEMPLATE,
        },
        {"name": "Qwen/Qwen3-8B", "backend": {"url": BACKEND}},
        {"name": "*", "backend": {"url": BACKEND}},
        {"name": "demo", "backend": {"demo": True}, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"},
    ]
    gateway = gateway_process({"server": {"host": "127.0.0.1"}, "models": models})
    assert lines(gateway, "INFO")[: len(models)] == [
        "model qwen3: urls=http://ops:***@127.0.0.1:9/v1?api-key=*** server=vllm mode=chat "
        "reasoning_parser=qwen3 tool_call_parser=qwen25",
        f"model pair: urls={BACKEND},http://127.0.0.1:10/v1 server=auto mode=chat "
        "reasoning_parser=none tool_call_parser=qwen25",
        f"model templated: urls={BACKEND} server=llamacpp mode=template chat_template={TEMPLATE} "
        "reasoning_parser=qwen3 tool_call_parser=qwen25 (template: recognised as qwen25+qwen3)",
        f"model Qwen/Qwen3-8B: urls={BACKEND} server=auto mode=chat "
        "reasoning_parser=qwen3 tool_call_parser=qwen25 (picked from the model name)",
        f"model *: urls={BACKEND} server=auto mode=chat parsers picked per request from the requested model name",
        "model demo: urls=demo server=demo mode=chat reasoning_parser=qwen3 tool_call_parser=qwen25",
    ]
    assert lines(gateway, "WARNING") == []  # every parser set or picked; loopback
    log = "".join(gateway.log)
    assert URL_PASSWORD not in log and URL_KEY not in log and BACKEND_KEY not in log


def test_naming_one_parser_warns_that_the_other_stage_is_off(gateway_process):
    models = [
        {"name": "qwen3", "backend": {"url": BACKEND, "model": "Qwen/Qwen3-8B"}, "tool_call_parser": "qwen25"},
        {"name": "mine", "backend": {"url": BACKEND, "model": "org/house-model"}, "reasoning_parser": "qwen3"},
        # quiet: the name table has no reasoning parser for Qwen2.5; `none` says it is meant
        {"name": "qwen25", "backend": {"url": BACKEND, "model": "Qwen/Qwen2.5-7B"}, "tool_call_parser": "qwen25"},
        {"name": "said", "backend": {"url": BACKEND}, "reasoning_parser": "none", "tool_call_parser": "qwen25"},
    ]
    gateway = gateway_process({"server": {"host": "127.0.0.1"}, "models": models})
    assert lines(gateway, "WARNING") == [
        "model qwen3: reasoning_parser is not set, so reasoning is not parsed (naming only tool_call_parser "
        "turns the pick from the model name off; the model name's pick is qwen3): set reasoning_parser, or "
        "reasoning_parser: none if that is meant",
        "model mine: tool_call_parser is not set, so tool calls are not parsed (naming only reasoning_parser "
        "turns the pick from the model name off): set tool_call_parser, or tool_call_parser: none if that is meant",
    ]


@pytest.mark.parametrize(("keys", "warned"), [([], True), (["sk-startup-client-1"], False)], ids=["open", "keys"])
def test_listening_beyond_loopback_without_keys_warns(gateway_process, keys, warned):
    config = {"server": {"host": "0.0.0.0", "api_keys": keys}, "models": [{"name": "demo", "backend": {"demo": True}}]}
    warnings = lines(gateway_process(config), "WARNING")
    expected = (
        f"listening on 0.0.0.0 {UNGUARDED}; set server.api_keys (or server.api_keys_file), or listen on 127.0.0.1"
    )
    assert warnings == ([expected] if warned else [])


def between(gateway, first: str, last: str | None = None) -> list[str]:
    """The gateway's log lines (levels kept) after the last one holding
    `first`, up to the next one holding `last` (or the end)."""
    log = [line.strip() for line in gateway.log]
    start = max(index for index, line in enumerate(log) if first in line) + 1
    end = next((index for index in range(start, len(log)) if last is not None and last in log[index]), len(log))
    return log[start:end]


def reload(gateway, config: dict | str, marker: str, count: int) -> None:
    """Write `config` over the gateway's file, send SIGHUP, and wait for its `count`th `marker` line."""
    with open(gateway.config_path, "w") as file:
        file.write(config if isinstance(config, str) else orjson.dumps(config).decode())  # JSON is YAML
    gateway.process.send_signal(signal.SIGHUP)
    wait_until(lambda: sum(marker in line for line in gateway.log) == count)


def test_a_reload_logs_the_new_configs_lines_and_a_refused_one_logs_none(gateway_process):
    started = {"server": {"host": "0.0.0.0", "api_keys": ["sk-startup-client-1"]}, "models": [DEMO]}
    gateway = gateway_process(started)
    assert lines(gateway, "WARNING") == []
    url = f"http://ops:{URL_PASSWORD}@127.0.0.1:9/v1"
    half_named = {"name": "qwen3", "backend": {"url": url, "model": "Qwen/Qwen3-8B"}, "tool_call_parser": "qwen25"}
    # server.host changes at the next start: the warning names the address the gateway listens on
    reload(gateway, {"server": {"host": "127.0.0.1"}, "models": [half_named, DEMO]}, "config reloaded from", 1)
    wait_until(lambda: any(UNGUARDED in line for line in gateway.log))  # the last line
    assert between(gateway, "config reloaded from") == [
        "INFO:     model qwen3: urls=http://ops:***@127.0.0.1:9/v1 server=auto mode=chat "
        "reasoning_parser=none tool_call_parser=qwen25",
        "WARNING:  model qwen3: reasoning_parser is not set, so reasoning is not parsed (naming only "
        "tool_call_parser turns the pick from the model name off; the model name's pick is qwen3): set "
        "reasoning_parser, or reasoning_parser: none if that is meant",
        "INFO:     model demo: urls=demo server=demo mode=chat reasoning_parser=qwen3 tool_call_parser=qwen25",
        f"WARNING:  listening on 0.0.0.0 {UNGUARDED}; set server.api_keys (or server.api_keys_file), "
        "or listen on 127.0.0.1",
    ]
    assert URL_PASSWORD not in "".join(gateway.log)

    reload(gateway, "models:\n  - {name: broken, backend: {demo: true}, tool_call_parser: nope}\n", "reload refused", 1)
    reload(gateway, {"server": {"api_keys": ["sk-startup-client-1"]}, "models": [DEMO]}, "config reloaded from", 2)
    assert not [line for line in between(gateway, "reload refused", "config reloaded from") if "model " in line]
    wait_until(lambda: between(gateway, "config reloaded from") != [])
    assert between(gateway, "config reloaded from") == [
        "INFO:     model demo: urls=demo server=demo mode=chat reasoning_parser=qwen3 tool_call_parser=qwen25"
    ]
