"""Which reasoning parser a model gets, and where its reply starts, through
the real gateway with the official `openai` and `anthropic` clients: the
template switch a request sends (Seed-OSS's `thinking_budget`, GigaChat
3.5's `reasoning`, or the reasoning effort that sets them), and the parsers
picked from the backend model name for models that do not reason or that
open their reasoning themselves (issue 43)."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import tool_format
from tests.gateway.test_gateway_e2e import MESSAGES
from tests.sdk_clients import anthropic_client, openai_client

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
PARIS = [("get_weather", {"city": "Paris"})]
# name -> backend model: entries naming no parser, picked from the name
PICKED = {
    "qwen3-coder": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "qwen3-instruct-2507": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "kimi-k2-instruct": "moonshotai/Kimi-K2-Instruct-0905",
    "kimi-k2-thinking": "moonshotai/Kimi-K2-Thinking",
    "lfm2": "LiquidAI/LFM2.5-8B-A1B",
    "apriel": "ServiceNow-AI/Apriel-1.5-15b-Thinker",
    "seed-oss": "ByteDance-Seed/Seed-OSS-36B-Instruct",
    "gigachat": "ai-sage/GigaChat3.5-10B-A1.8B",
}


# The end of Seed-OSS's chat template (chat_template.jinja of
# huggingface.co/ByteDance-Seed/Seed-OSS-36B-Instruct): for a zero budget the
# generation prompt holds the whole think block, closed.
SEED_GENERATION_PROMPT = (
    "{% for m in messages %}<seed:bos>{{ m.role }}\n{{ m.content }}<seed:eos>{% endfor %}<seed:bos>assistant\n"
    "{% if thinking_budget is defined and thinking_budget == 0 %}<seed:think>\n<seed:cot_budget_reflect>"
    "The current thinking budget is 0, so I will directly start answering the question."
    "</seed:cot_budget_reflect>\n</seed:think>{% endif %}"
)

# llama.cpp's copy of the template (models/templates/ByteDance-Seed-OSS.jinja)
# opens the think block and a budget reflection for a zero budget instead.
SEED_OPEN_GENERATION_PROMPT = SEED_GENERATION_PROMPT.split("{% if")[0] + (
    "{% if thinking_budget is defined and thinking_budget == 0 %}<seed:think><seed:cot_budget_reflect>{% endif %}"
)


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server, tmp_path_factory) -> str:
    _, fake_url = fake_backend_server
    models = [{"name": name, "backend": {"url": f"{fake_url}/v1", "model": model}} for name, model in PICKED.items()]
    models.append(
        {
            "name": "seed-oss-budget-0",
            "backend": {"url": f"{fake_url}/v1", "model": PICKED["seed-oss"]},
            "extra_body": {"chat_template_kwargs": {"thinking_budget": 0}},
        }
    )
    template = tmp_path_factory.mktemp("templates") / "seed-oss.jinja"
    template.write_text(SEED_GENERATION_PROMPT)
    backend = {"url": f"{fake_url}/v1", "model": PICKED["seed-oss"], "server": "vllm"}
    opening = template.with_name("seed-oss-open.jinja")
    opening.write_text(SEED_OPEN_GENERATION_PROMPT)
    parsers = {"reasoning_parser": "seed_oss", "tool_call_parser": "seed_oss"}
    models.append({"name": "seed-oss-template", "backend": backend, "chat_template": str(template), **parsers})
    models.append({"name": "seed-oss-open", "backend": backend, "chat_template": str(opening), **parsers})
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(scope="module")
def client(gateway) -> openai.OpenAI:
    return openai_client(gateway)


@pytest.fixture(scope="module")
def claude(gateway) -> anthropic.Anthropic:
    return anthropic_client(gateway)


def turn(client, fake, text: str, **request) -> tuple[str | None, str | None, list]:
    """(reasoning, content, calls) of the reply to `text`, the same streamed
    and not."""
    fake.script(text, chunk_size=3)
    message = client.chat.completions.create(messages=MESSAGES, tools=TOOLS, **request).choices[0].message
    whole = (
        getattr(message, "reasoning_content", None) or None,
        message.content or None,
        [(call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls or ()],
    )
    reasoning, content, calls = "", "", {}
    for chunk in client.chat.completions.create(messages=MESSAGES, tools=TOOLS, stream=True, **request):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                name, arguments = calls.get(call.index, ("", ""))
                calls[call.index] = (name + (call.function.name or ""), arguments + (call.function.arguments or ""))
    streamed = [(name, json.loads(arguments)) for name, arguments in (calls[index] for index in sorted(calls))]
    assert (reasoning or None, content or None, streamed) == whole
    return whole


SEED_CALL = tool_format("seed_oss").render_call("get_weather", '{"city": "Paris"}')


def test_seed_oss_with_a_zero_thinking_budget_answers_and_calls_at_once(client, fake):
    budget = {"chat_template_kwargs": {"thinking_budget": 0}}
    text = "Checking the weather.\n" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss", extra_body=budget) == (None, "Checking the weather.\n", PARIS)
    assert fake.last_body["chat_template_kwargs"] == {"thinking_budget": 0}
    assert turn(client, fake, "It is sunny.", model="seed-oss", extra_body=budget) == (None, "It is sunny.", [])


def test_seed_oss_zero_budget_in_template_mode(client, fake):
    """The prompt parsegate renders closes the think block, and the reply is
    read as the model writes it after that prompt."""
    budget = {"chat_template_kwargs": {"thinking_budget": 0}}
    text = "Checking.\n" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss-template", extra_body=budget) == (None, "Checking.\n", PARIS)
    assert fake.last_body["prompt"].endswith("</seed:cot_budget_reflect>\n</seed:think>")
    thinking = "Need the weather.</seed:think>" + SEED_CALL
    assert turn(client, fake, thinking, model="seed-oss-template") == ("Need the weather.", None, PARIS)
    assert fake.last_body["prompt"].endswith("<seed:bos>assistant\n")


def test_seed_oss_zero_budget_left_open_by_the_older_template(client, fake):
    """Where the prompt ends inside a budget reflection, the model closes it
    and the thought before its calls: that much is reasoning."""
    budget = {"chat_template_kwargs": {"thinking_budget": 0}}
    reflection = "The current thinking budget is 0, so I will directly start answering the question."
    text = reflection + "</seed:cot_budget_reflect>\n</seed:think>\n" + SEED_CALL
    expected = (reflection + "</seed:cot_budget_reflect>\n", None, PARIS)
    assert turn(client, fake, text, model="seed-oss-open", extra_body=budget) == expected
    assert fake.last_body["prompt"].endswith("<seed:think><seed:cot_budget_reflect>")


def test_seed_oss_zero_budget_set_by_the_config(client, fake):
    text = "Checking.\n" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss-budget-0") == (None, "Checking.\n", PARIS)
    assert fake.last_body["chat_template_kwargs"] == {"thinking_budget": 0}


@pytest.mark.parametrize("effort", [{"reasoning_effort": "none"}, {"extra_body": {"reasoning": {"enabled": False}}}])
def test_a_reasoning_effort_of_none_sets_seed_osss_zero_budget(client, fake, effort):
    text = "Checking.\n" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss", **effort) == (None, "Checking.\n", PARIS)
    assert fake.last_body["chat_template_kwargs"] == {"thinking": False, "enable_thinking": False, "thinking_budget": 0}


def test_the_clients_own_budget_wins_over_its_effort(client, fake):
    request = {"reasoning_effort": "none", "extra_body": {"chat_template_kwargs": {"thinking_budget": 1024}}}
    text = "<seed:think>Need the weather.</seed:think>" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss", **request) == ("Need the weather.", None, PARIS)
    assert fake.last_body["chat_template_kwargs"]["thinking_budget"] == 1024


def test_anthropic_thinking_disabled_sets_seed_osss_zero_budget(claude, fake):
    fake.script("Checking.\n" + SEED_CALL, chunk_size=3)
    reply = claude.messages.create(
        model="seed-oss",
        max_tokens=64,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[{"name": "get_weather", "input_schema": PARAMETERS}],
        thinking={"type": "disabled"},
    )
    assert [(block.type, getattr(block, "text", None) or getattr(block, "input", None)) for block in reply.content] == [
        ("text", "Checking.\n"),
        ("tool_use", {"city": "Paris"}),
    ]
    assert fake.last_body["chat_template_kwargs"]["thinking_budget"] == 0


def test_gigachat_thinks_when_an_effort_turns_its_reasoning_switch_on(client, fake):
    text = "Need the weather.</think>It is sunny."
    assert turn(client, fake, text, model="gigachat") == (None, text, [])
    assert turn(client, fake, text, model="gigachat", reasoning_effort="high") == (
        "Need the weather.",
        "It is sunny.",
        [],
    )
    assert fake.last_body["chat_template_kwargs"] == {"thinking": True, "enable_thinking": True, "reasoning": True}


@pytest.mark.parametrize("budget", [None, -1, 512], ids=["no budget", "unlimited", "512"])
def test_seed_oss_with_a_budget_thinks_first(client, fake, budget):
    request = {} if budget is None else {"extra_body": {"chat_template_kwargs": {"thinking_budget": budget}}}
    text = "<seed:think>Need the weather.</seed:think>" + SEED_CALL
    assert turn(client, fake, text, model="seed-oss", **request) == ("Need the weather.", None, PARIS)


@pytest.mark.parametrize(
    ("model", "parser"),
    [
        ("qwen3-coder", "qwen3_coder"),
        ("qwen3-instruct-2507", "qwen25"),
        ("kimi-k2-instruct", "kimi_k2"),
        ("apriel", "apriel"),
        ("lfm2", "lfm2"),
    ],
)
def test_a_model_that_writes_no_reasoning_keeps_its_text_before_a_call_as_content(client, fake, model, parser):
    call = tool_format(parser).render_call("get_weather", '{"city": "Paris"}')
    assert turn(client, fake, "Let me check.\n" + call, model=model) == (None, "Let me check.\n", PARIS)
    assert turn(client, fake, "It is sunny.", model=model, reasoning_effort="high") == (None, "It is sunny.", [])


def test_lfm2_reads_the_think_block_it_writes_before_its_calls(client, fake):
    text = '<think>The user wants the weather.</think><|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>'
    assert turn(client, fake, text, model="lfm2") == ("The user wants the weather.", None, PARIS)


def test_apriel_reads_the_thinking_block_it_writes(client, fake):
    text = '<thinking>Need it.</thinking>Checking.<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>'
    assert turn(client, fake, text, model="apriel") == ("Need it.", "Checking.", PARIS)


def test_kimi_k2_thinking_still_starts_in_reasoning(client, fake):
    text = "Need the weather.</think>It is sunny."
    assert turn(client, fake, text, model="kimi-k2-thinking") == ("Need the weather.", "It is sunny.", [])
