"""Agent loops in template mode with real chat templates, through the real
gateway and the official SDKs on every surface: the model's call comes
back in the next turn's history, and that turn must render.

- Mistral templates refuse any call id that is not 9 letters and digits,
  so Mistral-family ids are made so (as vLLM makes them) on chat
  completions, Responses and Messages.
- Kimi K2's ids (`functions.NAME:N`) go out on Messages encoded to
  Anthropic's id pattern, and come back as Kimi's own: the next turn
  renders as it does on chat completions.
- DeepSeek V3.1 / R1 and functionary v3.2 write `'…' + arguments`: they get
  each call's `arguments` as the request's JSON text, byte for byte.
- `chat_template_kwargs` may not name what the renderer passes itself.
- A template's `raise_exception` message is masked like any error text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import tool_format
from tests.fake_backend import BACKEND_KEY
from tests.sdk_clients import anthropic_client, openai_client

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")  # what Anthropic's API takes as a tool_use id
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]
ASK = {"role": "user", "content": "Weather in Paris?"}
RESULT = "18°C and sunny"
ANSWER = "It is 18°C and sunny in Paris."
# Arguments as a model writes them, spaced unlike json.dumps: a prompt that
# holds them byte for byte got the request's text, not a re-serialised mapping.
ARGUMENTS = '{"city":"Paris","days":2}'
RENDER_ARGUMENTS = ("messages", "tools", "documents", "add_generation_prompt")
# name -> (template, bos, eos, tool-call parser, the model's first reply)
MODELS = {
    "mistral-small": (
        "mistralai-Mistral-Small-3.2-24B-Instruct-2506.jinja",
        "<s>",
        "</s>",
        "mistral",
        "[TOOL_CALLS]get_weather[ARGS]" + ARGUMENTS,
    ),
    "mistral-nemo": (
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "<s>",
        "</s>",
        "mistral",
        tool_format("mistral").render_call("get_weather", ARGUMENTS),
    ),
    "kimi-k2": (
        "moonshotai-Kimi-K2-Instruct.jinja",
        "[BOS]",
        "[EOS]",
        "kimi_k2",
        tool_format("kimi_k2").render_call("get_weather", ARGUMENTS),
    ),
    "deepseek-v31": (
        "deepseek-ai-DeepSeek-V3.1.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
        "deepseekv31",
        tool_format("deepseekv31").render_call("get_weather", ARGUMENTS),
    ),
    "deepseek-r1": (
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
        "deepseekv3",
        tool_format("deepseekv3").render_call("get_weather", ARGUMENTS),
    ),
    "functionary-v32": (
        "meetkai-functionary-medium-v3.2.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
        "functionary_v3_2",
        tool_format("functionary_v3_2").render_call("get_weather", ARGUMENTS),
    ),
}
# What the second turn's prompt must hold for the call the first turn made
# (`{id}`: its id), in each template's own writing.
MISTRAL_SMALL_HISTORY = ("[CALL_ID]{id}[ARGS]", "[TOOL_RESULTS]{id}[TOOL_CONTENT]" + RESULT)
MISTRAL_NEMO_HISTORY = ('"id": "{id}"', '"call_id": "{id}"')
KIMI_K2_HISTORY = (
    "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>",
    "<|im_system|>tool<|im_middle|>## Return of functions.get_weather:0\\n" + RESULT,
)
TEXT_ARGUMENTS_HISTORY = {
    "deepseek-v31": "get_weather<｜tool▁sep｜>" + ARGUMENTS + "<｜tool▁call▁end｜>",
    "deepseek-r1": "get_weather\n```json\n" + ARGUMENTS + "\n```<｜tool▁call▁end｜>",
    "functionary-v32": ">>>get_weather\n" + ARGUMENTS + "<|eot_id|>",
}
# raises with the last message's text, as a template that echoes its input
ECHOING_TEMPLATE = "{{ raise_exception('cannot answer: ' + messages[-1]['content']) }}"


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1", "server": "vllm"}
    models = [
        {
            "name": name,
            "backend": backend,
            "chat_template": str(TEMPLATES / template),
            "bos_token": bos,
            "eos_token": eos,
            "reasoning_parser": "none",
            "tool_call_parser": parser,
        }
        for name, (template, bos, eos, parser, _) in MODELS.items()
    ]
    qwen3 = {"backend": backend, "chat_template": str(TEMPLATES / "Qwen-Qwen3-0.6B.jinja")}
    models.append({"name": "qwen3", **qwen3, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"})
    models += [
        {"name": f"kwargs-{name}", **qwen3, "extra_body": {"chat_template_kwargs": {name: []}}}
        for name in RENDER_ARGUMENTS
    ]
    echoing = tmp_path_factory.mktemp("templates") / "echoing.jinja"
    echoing.write_text(ECHOING_TEMPLATE)
    models.append({"name": "echoing", "backend": {**backend, "api_key": BACKEND_KEY}, "chat_template": str(echoing)})
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(scope="module")
def chat(gateway) -> openai.OpenAI:
    return openai_client(gateway)


@pytest.fixture(scope="module")
def claude(gateway) -> anthropic.Anthropic:
    return anthropic_client(gateway)


def chat_call(chat: openai.OpenAI, model: str, messages: list[dict], stream: bool) -> dict:
    """The turn's one tool call as a history entry (`id`, `function`)."""
    request = {"model": model, "messages": messages, "tools": CHAT_TOOLS}
    if not stream:
        (call,) = chat.chat.completions.create(**request).choices[0].message.tool_calls
        return {"id": call.id, "type": "function", "function": call.function.model_dump()}
    call = {"type": "function", "function": {"name": "", "arguments": ""}}
    for chunk in chat.chat.completions.create(**request, stream=True):
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            assert delta.index == 0
            call["id"] = delta.id or call.get("id")
            call["function"]["name"] += delta.function.name or ""
            call["function"]["arguments"] += delta.function.arguments or ""
    return call


def chat_loop(chat: openai.OpenAI, fake, model: str, stream: bool = False) -> tuple[dict, str]:
    """Two turns on chat completions: the call the first made, and the
    prompt the second rendered (its answer checked)."""
    fake.script(MODELS[model][4])
    call = chat_call(chat, model, [ASK], stream)
    assert call["function"]["name"] == "get_weather"
    fake.script(ANSWER)
    history = [ASK, {"role": "assistant", "content": None, "tool_calls": [call]}]
    history.append({"role": "tool", "tool_call_id": call["id"], "content": RESULT})
    reply = chat.chat.completions.create(model=model, messages=history, tools=CHAT_TOOLS)
    assert reply.choices[0].message.content == ANSWER
    return call, fake.last_body["prompt"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("model", "history"), [("mistral-small", MISTRAL_SMALL_HISTORY), ("mistral-nemo", MISTRAL_NEMO_HISTORY)]
)
def test_a_mistral_agent_loop_on_chat_completions(chat, fake, model, history, stream):
    call, prompt = chat_loop(chat, fake, model, stream)
    assert MISTRAL_ID.fullmatch(call["id"]), call["id"]
    for written in history:
        assert written.format(id=call["id"]) in prompt


@pytest.mark.parametrize("stream", [False, True])
def test_a_mistral_agent_loop_on_responses(chat, fake, stream):
    fake.script(MODELS["mistral-small"][4])
    ask = [{"role": "user", "content": ASK["content"]}]
    request = {"model": "mistral-small", "input": ask, "tools": RESPONSES_TOOLS}
    if stream:
        (response,) = [
            event.response
            for event in chat.responses.create(**request, stream=True)
            if event.type == "response.completed"
        ]
    else:
        response = chat.responses.create(**request)
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert MISTRAL_ID.fullmatch(call.call_id), call.call_id
    fake.script(ANSWER)
    output = {"type": "function_call_output", "call_id": call.call_id, "output": RESULT}
    second = chat.responses.create(**{**request, "input": [*ask, call.to_dict(), output]})
    assert second.status == "completed" and second.output_text == ANSWER
    for written in MISTRAL_SMALL_HISTORY:
        assert written.format(id=call.call_id) in fake.last_body["prompt"]


def messages_loop(
    claude: anthropic.Anthropic, fake, model: str, stream: bool
) -> tuple[anthropic.types.ToolUseBlock, str]:
    """Two turns on Messages, the first's blocks sent back as the SDK gives
    them: the call the first made, and the prompt the second rendered (its
    answer checked)."""
    fake.script(MODELS[model][4])
    ask = [{"role": "user", "content": ASK["content"]}]
    request = {"model": model, "max_tokens": 100, "messages": ask, "tools": MESSAGES_TOOLS}
    if stream:
        with claude.messages.stream(**request) as events:
            message = events.get_final_message()
    else:
        message = claude.messages.create(**request)
    (call,) = [block for block in message.content if block.type == "tool_use"]
    fake.script(ANSWER)
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": RESULT}]}
    turn = {"role": "assistant", "content": [block.model_dump() for block in message.content]}
    second = claude.messages.create(**{**request, "messages": [*ask, turn, result]})
    assert second.stop_reason == "end_turn" and second.content[0].text == ANSWER
    return call, fake.last_body["prompt"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_mistral_agent_loop_on_messages(claude, fake, stream):
    call, prompt = messages_loop(claude, fake, "mistral-small", stream)
    assert MISTRAL_ID.fullmatch(call.id), call.id
    for written in MISTRAL_SMALL_HISTORY:
        assert written.format(id=call.id) in prompt


@pytest.mark.parametrize("stream", [False, True])
def test_a_kimi_k2_agent_loop_on_messages_sends_anthropic_ids_and_renders_kimi_s(chat, claude, fake, stream):
    call, prompt = messages_loop(claude, fake, "kimi-k2", stream)
    assert ANTHROPIC_ID.fullmatch(call.id), call.id
    assert call.id == "toolu_enc_functions-2Eget_weather-3A0"
    for written in KIMI_K2_HISTORY:
        assert written in prompt
    kimi_call, chat_prompt = chat_loop(chat, fake, "kimi-k2", stream)
    assert kimi_call["id"] == "functions.get_weather:0"  # chat completions keep Kimi's own
    assert prompt == chat_prompt


@pytest.mark.parametrize("model", sorted(TEXT_ARGUMENTS_HISTORY))
def test_templates_that_concatenate_arguments_get_the_request_s_text(chat, fake, model):
    call, prompt = chat_loop(chat, fake, model)
    assert call["function"]["arguments"] == ARGUMENTS
    assert TEXT_ARGUMENTS_HISTORY[model] in prompt
    _, again = chat_loop(chat, fake, model)  # the form found is kept: the same prompt again
    assert again == prompt


def test_render_shows_the_arguments_text_it_sends():
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}
    history = [ASK, {"role": "assistant", "content": None, "tool_calls": [call]}]
    history.append({"role": "tool", "tool_call_id": "call_1", "content": RESULT})
    template, bos, eos, *_ = MODELS["deepseek-v31"]
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "render", "--template", str(TEMPLATES / template)]
        + [f"--bos-token={bos}", f"--eos-token={eos}"],
        input=json.dumps({"messages": history, "tools": CHAT_TOOLS}).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert TEXT_ARGUMENTS_HISTORY["deepseek-v31"] in done.stdout.decode()


@pytest.mark.parametrize("name", RENDER_ARGUMENTS)
def test_chat_template_kwargs_naming_a_render_argument_is_a_400_on_chat(chat, fake, name):
    sent_before = len(fake.requests)
    with pytest.raises(openai.BadRequestError) as raised:
        chat.chat.completions.create(model="qwen3", messages=[ASK], extra_body={"chat_template_kwargs": {name: []}})
    assert raised.value.body["param"] == "chat_template_kwargs" and repr(name) in raised.value.message
    assert len(fake.requests) == sent_before


@pytest.mark.parametrize("name", RENDER_ARGUMENTS)
def test_chat_template_kwargs_naming_a_render_argument_is_a_400_on_responses(chat, fake, name):
    with pytest.raises(openai.BadRequestError) as raised:
        chat.responses.create(model="qwen3", input="Hi", extra_body={"chat_template_kwargs": {name: []}})
    assert raised.value.body["param"] == "chat_template_kwargs" and repr(name) in raised.value.message


@pytest.mark.parametrize("name", RENDER_ARGUMENTS)
def test_chat_template_kwargs_naming_a_render_argument_is_a_400_on_messages(claude, fake, name):
    """A Messages request carries no chat_template_kwargs of its own; a
    model's extra_body can."""
    with pytest.raises(anthropic.BadRequestError) as raised:
        claude.messages.create(model=f"kwargs-{name}", max_tokens=10, messages=[ASK])
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "invalid_request_error"
    assert f"chat_template_kwargs may not set {name!r}" in raised.value.body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_template_s_message_is_masked_like_any_error(chat, claude, fake, stream):
    leaked = {"role": "user", "content": f"my key is {BACKEND_KEY}"}
    with pytest.raises(openai.BadRequestError) as raised:
        chat.chat.completions.create(model="echoing", messages=[leaked], stream=stream)
    body = raised.value.response.text
    assert BACKEND_KEY not in body and "cannot answer: my key is ***" in body
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echoing", max_tokens=10, messages=[leaked], stream=stream)
    assert BACKEND_KEY not in refused.value.response.text and "my key is ***" in refused.value.response.text
