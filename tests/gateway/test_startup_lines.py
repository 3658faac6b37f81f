"""What `parsegate serve` logs at start-up, from a real subprocess: one line
per model (URLs with credentials masked, server kind, mode, parsers), a
warning for each entry that names one parser and leaves the other silently
off, and one for a listen address beyond loopback with no API keys."""

from __future__ import annotations

from pathlib import Path

import pytest

TEMPLATE = str(Path(__file__).parent.parent / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja")
BACKEND = "http://127.0.0.1:9/v1"  # never called at start-up
URL_PASSWORD, URL_KEY, BACKEND_KEY = "pw-in-the-url-1", "key-in-the-query-1", "sk-startup-backend-1"
UNGUARDED = "with no server.api_keys: anyone who reaches this address can use every model"


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
