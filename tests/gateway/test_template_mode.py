"""Template mode: a model entry with `chat_template` renders the prompt with
the model's own chat template, sends it to the backend's /v1/completions,
and answers the chat request as in chat mode — streamed and not — with the
real gateway and the openai client in front of the scripted backend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest
import yaml

from gateway.app import create_app
from gateway.ops.config import Config, ConfigError, load_config
from gateway.templates.sources import load_chat_template
from tests.gateway.test_chat_template import CONVERSATIONS, MODELS, _transformers
from tests.gateway.test_gateway_e2e import TOOLS
from tests.sdk_clients import openai_client

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN3 = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
R1_DISTILL = TEMPLATES / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
LLAMA32 = TEMPLATES / "meta-llama-Llama-3.2-3B-Instruct.jinja"
GEMMA2 = TEMPLATES / "google-gemma-2-2b-it.jinja"
MESSAGES = [{"role": "user", "content": "Weather in Paris and in Zürich?"}]
REPLY = (
    "<think>Two cities.</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>'
)


def _entry(name: str, template: Path, fake_url: str, **extra) -> dict:
    return {
        "name": name,
        "backend": {"url": f"{fake_url}/v1", "server": extra.pop("server", "other")},
        "chat_template": str(template),
        "reasoning_parser": extra.pop("reasoning_parser", "qwen3"),
        "tool_call_parser": extra.pop("tool_call_parser", "qwen25"),
        **extra,
    }


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    models = [
        _entry("qwen3-t", QWEN3, fake_url),
        _entry("qwen3-vllm", QWEN3, fake_url, server="vllm"),
        _entry("r1-t", R1_DISTILL, fake_url, reasoning_parser="deepseek-r1", tool_call_parser="none"),
        _entry("llama-cpp", LLAMA32, fake_url, server="llamacpp", bos_token="<|begin_of_text|>"),
        _entry("llama-other", LLAMA32, fake_url, bos_token="<|begin_of_text|>"),
        _entry("gemma-t", GEMMA2, fake_url, reasoning_parser="none", tool_call_parser="none"),
    ]
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(url)


def _prompt(template: Path, messages: list[dict], **kwargs) -> str:
    return load_chat_template(template, bos_token=kwargs.pop("bos_token", None)).render(messages, **kwargs)


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_request_is_rendered_sent_to_completions_and_parsed(client, fake, stream):
    fake.script(REPLY, chunk_size=3)
    kwargs = {"model": "qwen3-t", "messages": MESSAGES, "tools": TOOLS, "max_completion_tokens": 300, "seed": 7}
    if stream:
        reasoning, calls, finish = "", {}, None
        for chunk in client.chat.completions.create(**kwargs, stream=True):
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            for call in delta.tool_calls or []:
                calls.setdefault(call.index, ["", ""])
                calls[call.index][0] += call.function.name or ""
                calls[call.index][1] += call.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
        made = [(name, json.loads(arguments)) for name, arguments in calls.values()]
    else:
        reply = client.chat.completions.create(**kwargs)
        message, finish = reply.choices[0].message, reply.choices[0].finish_reason
        reasoning = message.reasoning_content
        made = [(call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls]
        assert reply.usage is not None and reply.usage.total_tokens > 0
    assert reasoning == "Two cities."
    assert made == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Zürich"})]
    assert finish == "tool_calls"
    sent = fake.last_body
    assert "prompt" in sent and "messages" not in sent and "tools" not in sent
    assert sent["prompt"] == _prompt(QWEN3, MESSAGES, tools=TOOLS)
    assert sent["max_tokens"] == 300 and sent["seed"] == 7 and "max_completion_tokens" not in sent
    assert sent["stop"] == ["<|im_end|>"]
    assert bool(sent.get("stream")) is stream


def test_the_request_s_own_stop_wins_over_the_template_s(client, fake):
    fake.script("Fine.")
    client.chat.completions.create(model="qwen3-t", messages=MESSAGES, stop=["END"])
    assert fake.last_body["stop"] == ["END"]


def test_thinking_off_is_a_template_variable(client, fake):
    fake.script("Plain answer.")
    reply = client.chat.completions.create(
        model="qwen3-t", messages=MESSAGES, extra_body={"chat_template_kwargs": {"enable_thinking": False}}
    )
    assert fake.last_body["prompt"].endswith("<think>\n\n</think>\n\n")
    assert reply.choices[0].message.content == "Plain answer."


def test_a_prompt_that_opens_reasoning_starts_the_reply_in_reasoning(client, fake):
    fake.script("The sky scatters blue light.</think>\n\nBecause of Rayleigh scattering.")
    reply = client.chat.completions.create(model="r1-t", messages=[{"role": "user", "content": "Why is the sky blue?"}])
    assert fake.last_body["prompt"].endswith("<｜Assistant｜><think>\n")
    message = reply.choices[0].message
    assert message.reasoning_content == "The sky scatters blue light."
    assert message.content == "\n\nBecause of Rayleigh scattering."


def test_vllm_and_sglang_keep_the_template_s_bos_and_are_told_not_to_add_one(client, fake):
    fake.script("Hi.")
    client.chat.completions.create(model="qwen3-vllm", messages=MESSAGES)
    sent = fake.last_body
    assert sent["add_special_tokens"] is False and sent["skip_special_tokens"] is False


def test_llama_cpp_gets_the_prompt_without_the_bos_it_adds_itself(client, fake):
    fake.script("Hi.")
    client.chat.completions.create(model="llama-cpp", messages=MESSAGES)
    rendered = _prompt(LLAMA32, MESSAGES, bos_token="<|begin_of_text|>")
    assert rendered.startswith("<|begin_of_text|>")
    assert fake.last_body["prompt"] == rendered.removeprefix("<|begin_of_text|>")
    assert "add_special_tokens" not in fake.last_body


def test_other_servers_get_the_prompt_as_rendered(client, fake):
    fake.script("Hi.")
    client.chat.completions.create(model="llama-other", messages=MESSAGES)
    assert fake.last_body["prompt"] == _prompt(LLAMA32, MESSAGES, bos_token="<|begin_of_text|>")
    assert "add_special_tokens" not in fake.last_body and "skip_special_tokens" not in fake.last_body


@pytest.mark.parametrize("stream", [False, True])
def test_a_template_that_raises_is_a_400_with_its_message(client, fake, stream):
    fake.script("never sent")
    sent_before = len(fake.requests)
    broken = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="gemma-t", messages=broken, stream=stream)
    assert "Conversation roles must alternate" in raised.value.message
    assert raised.value.body["param"] == "messages"
    assert len(fake.requests) == sent_before


def _config(tmp_path: Path, **entry) -> Path:
    path = tmp_path / "config.yaml"
    model = {"name": "m", "backend": {"url": "http://127.0.0.1:9/v1"}, **entry}
    path.write_text(yaml.safe_dump({"models": [model]}))
    return path


def test_the_template_path_is_relative_to_the_config_file_and_expands_variables(tmp_path, monkeypatch):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "qwen.jinja").write_bytes(QWEN3.read_bytes())
    monkeypatch.setenv("TEMPLATE_DIR", "templates")
    config = load_config(_config(tmp_path, chat_template="${TEMPLATE_DIR}/qwen.jinja"))
    assert config.models[0].chat_template == str(tmp_path / "templates" / "qwen.jinja")


def test_a_missing_template_file_names_the_model_and_the_file(tmp_path):
    with pytest.raises(ConfigError, match=r"models\[0\]\.chat_template: no such file: .*nope\.jinja"):
        load_config(_config(tmp_path, chat_template="nope.jinja"))


def _parsegate(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], input=stdin.encode(), capture_output=True, timeout=60, check=False
    )


def test_serve_refuses_a_template_that_does_not_compile(tmp_path):
    (tmp_path / "bad.jinja").write_text("{% for m in messages %}{{ m.content }")
    done = _parsegate("serve", "--config", str(_config(tmp_path, chat_template="bad.jinja")))
    assert done.returncode == 2
    message = done.stderr.decode()
    assert "chat_template" in message and "bad.jinja" in message and "does not compile" in message
    assert "Traceback" not in message


REQUEST = {"messages": [{"role": "user", "content": "Grüße"}], "tools": TOOLS}


def test_render_prints_the_prompt_byte_for_byte(tmp_path):
    done = _parsegate("render", "--template", str(QWEN3), stdin=json.dumps(REQUEST))
    assert done.returncode == 0, done.stderr
    assert done.stdout == _prompt(QWEN3, REQUEST["messages"], tools=TOOLS).encode()


def test_render_as_a_configured_model(tmp_path):
    config = _config(tmp_path, chat_template=str(LLAMA32), bos_token="<|begin_of_text|>")
    done = _parsegate("render", "--config", str(config), "--model", "m", stdin=json.dumps(REQUEST))
    assert done.returncode == 0, done.stderr
    assert done.stdout == _prompt(LLAMA32, REQUEST["messages"], tools=TOOLS, bos_token="<|begin_of_text|>").encode()


def test_a_render_error_is_one_line_without_a_traceback():
    broken = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    done = _parsegate("render", "--template", str(GEMMA2), stdin=json.dumps(broken))
    assert done.returncode == 1
    assert done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "Conversation roles must alternate" in lines[0]


@pytest.mark.parametrize("fixture", sorted(MODELS))
def test_render_matches_transformers_on_every_fixture(fixture):
    """`parsegate render --template` prints what transformers renders, for
    the richest conversation of the fixture set each template accepts; for
    a template that accepts none (FireFunction v2 reads variables of its
    own, `functions` and `datetime`), it fails with one line, as
    transformers raises."""
    bos, eos = MODELS[fixture]
    expected = None
    for name in ("parallel_calls_with_results", *sorted(CONVERSATIONS)):
        messages, request = CONVERSATIONS[name]
        try:
            expected = _transformers((TEMPLATES / fixture).read_text(), bos, eos, messages, request)
        except Exception:  # the template refuses this conversation: try the next
            continue
        break
    flags = [f"--bos-token={bos}"] if bos else []
    flags += [f"--eos-token={eos}"] if eos else []
    body = json.dumps({"messages": messages, **request})
    done = _parsegate("render", "--template", str(TEMPLATES / fixture), *flags, stdin=body)
    if expected is None:
        assert done.returncode == 1 and done.stdout == b""
        assert len(done.stderr.decode().strip().splitlines()) == 1
        return
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected.encode()


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "weird", "text": "hello"},
    ],
)
def test_a_part_that_is_not_text_in_template_mode_is_a_400_naming_it(client, fake, part):
    sent_before = len(fake.requests)
    text = {"type": "text", "text": "And this?"}
    messages = [*MESSAGES, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": [text, part]}]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="qwen3-t", messages=messages)
    assert raised.value.body["code"] == "content_not_supported"
    assert raised.value.message.endswith(f"it takes no {part['type']!r} parts (messages[2].content[1])")
    assert len(fake.requests) == sent_before


@pytest.mark.parametrize("stream", [False, True])
def test_an_image_in_template_mode_is_a_400_not_silently_dropped(client, fake, stream):
    sent_before = len(fake.requests)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="qwen3-t", messages=messages, stream=stream)
    assert "takes no images" in raised.value.message and raised.value.body["param"] == "messages"
    assert len(fake.requests) == sent_before
