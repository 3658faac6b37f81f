"""Models served by the parsers their chat template implies, through the
real gateway over raw HTTP (docs/derived-parsers.md): `parsers_from:` in
chat mode and a template-mode `chat_template` with no parser named, streamed
and not; GET /v1/models shows each model's parsers and their origin; a
template with no structure is served as plain content with a warning
naming it."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gateway.app import create_app
from gateway.ops.config import Config, load_config
from gateway.upstream.derived_parsers import FROM_SERVER
from parsers import parse_text
from tests.gateway.test_template_derivation import MISTRAL_NEMO, QWEN3, R1_DISTILL, TEMPLATES, renamed
from tests.scripted_backend import ScriptedBackend, chat_answer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
BODY = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
REPLY = '<ponder>Paris, so a call.</ponder>\n\nLet me look.\n<invoke_fn>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</invoke_fn>'
GEMMA = "google-gemma-2-2b-it.jinja"
# Mistral Nemo's twin refuses any call id but 9 letters and digits, as Mistral's own template does
MISTRAL_REPLY = '[FN_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")


def write_config(folder: Path, backend_url: str) -> Path:
    (folder / "twin.jinja").write_text(renamed((TEMPLATES / QWEN3).read_text(encoding="utf-8")), encoding="utf-8")
    (folder / "mistral-twin.jinja").write_text(
        renamed((TEMPLATES / MISTRAL_NEMO).read_text(encoding="utf-8")), encoding="utf-8"
    )
    (folder / "r1-twin.jinja").write_text(
        renamed((TEMPLATES / R1_DISTILL).read_text(encoding="utf-8")), encoding="utf-8"
    )
    backend = {"url": backend_url}
    models = [
        {"name": "twin-chat", "backend": {**backend, "model": "brand-new-model"}, "parsers_from": "twin.jinja"},
        {"name": "twin-template", "backend": backend, "chat_template": "twin.jinja"},
        {"name": "r1-twin", "backend": backend, "chat_template": "r1-twin.jinja", "bos_token": "<s>"},
        {"name": "qwen-template", "backend": backend, "chat_template": str(TEMPLATES / QWEN3)},
        {
            "name": "mistral-twin",
            "backend": backend,
            "chat_template": "mistral-twin.jinja",
            "bos_token": "<s>",
            "eos_token": "</s>",
        },
        {"name": "plain", "backend": backend, "parsers_from": str(TEMPLATES / GEMMA)},
        {"name": "named", "backend": backend, "parsers_from": "twin.jinja", "tool_call_parser": "hermes"},
        {
            "name": "off",
            "backend": backend,
            "chat_template": "twin.jinja",
            "reasoning_parser": "none",
            "tool_call_parser": "none",
        },
        {"name": "Qwen/Qwen3-8B", "backend": backend},
        {"name": "qwen3-fine-tune", "backend": {**backend, "model": "Qwen/Qwen3-8B"}, "parsers_from": "twin.jinja"},
    ]
    path = folder / "config.yaml"
    path.write_text(json.dumps({"models": models}))
    return path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, serve, fake_backend_server) -> str:
    _, fake_url = fake_backend_server
    config = load_config(write_config(tmp_path_factory.mktemp("derived"), f"{fake_url}/v1"))
    return serve(create_app(config))


def streamed(url: str, model: str) -> tuple[str, str, list[tuple[str, str]], str | None]:
    reasoning, content, calls, finish = "", "", {}, None
    with httpx.stream("POST", f"{url}/v1/chat/completions", json={**BODY, "model": model, "stream": True}) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:])["choices"]:
                delta = choice["delta"]
                reasoning += delta.get("reasoning_content") or ""
                content += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    entry = calls.setdefault(call["index"], ["", ""])
                    entry[0] += call["function"].get("name") or ""
                    entry[1] += call["function"].get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    return reasoning, content, [tuple(calls[i]) for i in sorted(calls)], finish


@pytest.mark.parametrize("model", ["twin-chat", "twin-template"])
def test_a_model_with_derived_parsers_is_served_streamed_and_not(gateway, fake, model: str) -> None:
    for chunk_size in (1, 3, 7, len(REPLY)):
        fake.script(REPLY, chunk_size=chunk_size)
        reasoning, content, calls, finish = streamed(gateway, model)
        assert (reasoning, content.strip(), finish) == ("Paris, so a call.", "Let me look.", "tool_calls")
        assert [(name, json.loads(arguments)) for name, arguments in calls] == [("get_weather", {"city": "Paris"})]
        fake.script(REPLY, chunk_size=chunk_size)
        message = httpx.post(f"{gateway}/v1/chat/completions", json={**BODY, "model": model}).json()["choices"][0][
            "message"
        ]
        assert message["reasoning_content"] == "Paris, so a call."
        assert [call["function"]["name"] for call in message["tool_calls"]] == ["get_weather"]


def test_reasoning_the_derived_templates_prompt_opens_starts_the_reply(gateway, fake) -> None:
    fake.script("The user wants a greeting.</ponder>\n\nHello!", chunk_size=2)
    body = {"model": "r1-twin", "messages": [{"role": "user", "content": "Hi"}]}
    message = httpx.post(f"{gateway}/v1/chat/completions", json=body).json()["choices"][0]["message"]
    named = parse_text("The user wants a greeting.</think>\n\nHello!", "deepseek-r1", None)  # what R1 itself gets
    assert (message["reasoning_content"], message["content"]) == (named.reasoning_content, named.content)
    assert named.reasoning_content == "The user wants a greeting."


def test_models_list_each_models_parsers_and_where_they_come_from(gateway) -> None:
    listed = {model["id"]: model["parsers"] for model in httpx.get(f"{gateway}/v1/models").json()["data"]}
    derived = {"reasoning_parser": "derived", "tool_call_parser": "derived", "origin": "template: derived"}
    assert listed["twin-chat"] == listed["twin-template"] == derived
    assert listed["qwen-template"] == {
        "reasoning_parser": "qwen3",
        "tool_call_parser": "qwen25",
        "origin": "template: recognised as qwen25+qwen3",
    }
    assert listed["named"] == {"reasoning_parser": None, "tool_call_parser": "hermes", "origin": "config"}
    assert listed["off"] == {"reasoning_parser": None, "tool_call_parser": None, "origin": "config"}
    assert listed["Qwen/Qwen3-8B"] == {
        "reasoning_parser": "qwen3",
        "tool_call_parser": "qwen25",
        "origin": "model name",
    }
    assert listed["qwen3-fine-tune"] == derived  # the template wins over the model name's pick
    assert listed["plain"] == {"reasoning_parser": None, "tool_call_parser": None, "origin": "template: derived"}


def test_a_template_with_no_structure_is_plain_content_with_a_warning_naming_it(tmp_path, fake_backend_server, caplog):
    _, fake_url = fake_backend_server
    config = load_config(write_config(tmp_path, f"{fake_url}/v1"))
    with caplog.at_level(logging.WARNING, logger="parsegate.startup"):
        create_app(config)
    [warning] = [record.getMessage() for record in caplog.records if "model plain" in record.getMessage()]
    assert f"the chat template {TEMPLATES / GEMMA} writes no reasoning and no tool-call markers" in warning
    assert "served as plain content" in warning


def listed_parsers(url: str) -> dict:
    [model] = httpx.get(f"{url}/v1/models").json()["data"]
    return model["parsers"]


def _served_from_server(serve, name: str, **entry: object) -> tuple[ScriptedBackend, str]:
    """A scripted llama.cpp server, and a gateway whose model `name` takes
    its parsers from that server's template (`parsers_from: backend`)."""
    side = ScriptedBackend()
    model = {"name": name, "backend": {"url": f"{side.url}/v1", "server": "llamacpp"}, "parsers_from": "backend"}
    return side, serve(create_app(Config.model_validate({"models": [{**model, **entry}]})))


def test_parsers_from_the_servers_template_are_derived_at_the_first_request_once_and_listed(
    serve, caplog, failure_clock
) -> None:
    side, url = _served_from_server(serve, "from-props")
    body = {**BODY, "model": "from-props"}
    side.routes["/v1/chat/completions"] = chat_answer(REPLY)
    with caplog.at_level(logging.WARNING, logger="parsegate.startup"):
        for _ in range(3):
            message = httpx.post(f"{url}/v1/chat/completions", json=body).json()["choices"][0]["message"]
            assert message["content"] == REPLY  # /props unanswered: plain content for now
    assert side.asked("/props") == 1  # the failure kept: not asked again by each request
    [warning] = [record.getMessage() for record in caplog.records if "model from-props" in record.getMessage()]
    assert warning.endswith("no parsers from the server's chat template for now: Not Found")
    pending = {"reasoning_parser": None, "tool_call_parser": None, "origin": FROM_SERVER}
    assert listed_parsers(url) == pending
    twin = renamed((TEMPLATES / QWEN3).read_text(encoding="utf-8"))
    side.routes["/props"] = (200, {"chat_template": twin, "eos_token": "<|im_end|>"})
    failure_clock.pass_the_window()
    for _ in range(2):
        message = httpx.post(f"{url}/v1/chat/completions", json=body).json()["choices"][0]["message"]
        assert message["reasoning_content"] == "Paris, so a call."
        assert [json.loads(call["function"]["arguments"]) for call in message["tool_calls"]] == [{"city": "Paris"}]
    assert side.asked("/props") == 2  # asked again after the failure's window, kept once answered
    derived = {"reasoning_parser": "derived", "tool_call_parser": "derived", "origin": "template: derived"}
    assert listed_parsers(url) == derived


@pytest.mark.parametrize("stream", [False, True])
def test_a_derived_mistral_twin_makes_call_ids_its_template_renders_in_the_next_turn(gateway, fake, stream) -> None:
    fake.script(MISTRAL_REPLY, chunk_size=5)
    body = {**BODY, "model": "mistral-twin"}
    if stream:
        call_id = None
        with httpx.stream("POST", f"{gateway}/v1/chat/completions", json={**body, "stream": True}) as reply:
            for line in reply.iter_lines():
                if line.startswith("data: {"):
                    for choice in json.loads(line[6:])["choices"]:
                        for call in choice["delta"].get("tool_calls") or ():
                            call_id = call.get("id") or call_id
    else:
        [call] = httpx.post(f"{gateway}/v1/chat/completions", json=body).json()["choices"][0]["message"]["tool_calls"]
        call_id = call["id"]
    assert call_id is not None and MISTRAL_ID.fullmatch(call_id), call_id
    fake.script("It is 18°C in Paris.")
    call = {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    history = [
        *BODY["messages"],
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "18°C"},
    ]
    reply = httpx.post(f"{gateway}/v1/chat/completions", json={**body, "messages": history})
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "It is 18°C in Paris."
    prompt = fake.last_body["prompt"]
    assert f'"id": "{call_id}"' in prompt and f'"call_id": "{call_id}"' in prompt


# A template that renders the conversation, then loops for hours: the
# analysis must be cut off at the model's render_timeout.
LOOPING = (
    "{% for message in messages %}{{ message.content }}{% endfor %}"
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
)
CUT_OFF = "the analysis did not finish within its render_timeout (0.5 s)"


def test_a_template_whose_analysis_runs_past_render_timeout_is_plain_content_at_start_up(
    gateway_process, fake_backend_server, fake, tmp_path
) -> None:
    (tmp_path / "looping.jinja").write_text(LOOPING, encoding="utf-8")
    _, fake_url = fake_backend_server
    entry = {"name": "looping", "backend": {"url": f"{fake_url}/v1"}, "render_timeout": 0.5}
    gateway = gateway_process({"models": [{**entry, "parsers_from": str(tmp_path / "looping.jinja")}]})
    [warning] = [line for line in gateway.log if "model looping:" in line and "served as plain content" in line]
    assert CUT_OFF in warning
    fake.script(REPLY)
    message = httpx.post(f"{gateway.url}/v1/chat/completions", json={**BODY, "model": "looping"}).json()
    assert message["choices"][0]["message"]["content"] == REPLY


def _answer_and_warning(serve, caplog, name: str, template: str, **entry: object) -> tuple[str, str]:
    """A gateway whose model `name` takes its parsers from a server serving
    `template`: the URL, once a chat request has answered the scripted
    reply as content, and the one warning logged about the model."""
    side, url = _served_from_server(serve, name, **entry)
    side.routes["/props"] = (200, {"chat_template": template})
    side.routes["/v1/chat/completions"] = chat_answer(REPLY)
    with caplog.at_level(logging.WARNING, logger="parsegate.startup"):
        reply = httpx.post(f"{url}/v1/chat/completions", json={**BODY, "model": name})
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == REPLY
    [warning] = [record.getMessage() for record in caplog.records if f"model {name}" in record.getMessage()]
    return url, warning


def test_a_servers_template_whose_analysis_runs_past_render_timeout_is_plain_content(serve, caplog) -> None:
    url, warning = _answer_and_warning(serve, caplog, "looping-props", LOOPING, render_timeout=0.5)
    assert CUT_OFF in warning and "served as plain content" in warning
    assert listed_parsers(url) == {"reasoning_parser": None, "tool_call_parser": None, "origin": "template: derived"}


# Nested deeper than the parser's recursion reaches: it cannot compile.
TOO_DEEP = "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"


def test_a_servers_template_nested_too_deep_to_compile_is_plain_content(serve, caplog) -> None:
    _, warning = _answer_and_warning(serve, caplog, "deep-props", TOO_DEEP)
    assert "the chat template does not compile: it nests deeper than the template parser reaches" in warning


def test_serve_refuses_a_template_nested_too_deep_to_compile(tmp_path) -> None:
    (tmp_path / "deep.jinja").write_text(TOO_DEEP, encoding="utf-8")
    entry = {"name": "deep", "backend": {"url": "http://127.0.0.1:9/v1"}, "parsers_from": "deep.jinja"}
    (tmp_path / "config.yaml").write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--config", str(tmp_path / "config.yaml")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    message = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in message
    assert "parsers_from" in message and "deep.jinja" in message and "nests deeper than" in message
