"""Anthropic Messages details for coding agents (issue 44): a streamed
reply's `message_start` carries an estimate of the prompt's tokens (one
per four characters of the prompt as sent upstream: the rendered prompt in
template mode), and its `message_delta` the backend's own count. Through
the anthropic SDK against the real gateway in front of the fake backend."""

from __future__ import annotations

import math

import anthropic
import pytest

from gateway.api.messages_context import CLEARED_RESULT
from gateway.app import create_app
from gateway.ops.config import Config
from tests.fake_backend import USAGE
from tests.gateway.test_template_mode import QWEN3, _entry
from tests.sdk_clients import anthropic_client

QUESTION = [{"role": "user", "content": "Count the words of this sentence for me, please."}]


@pytest.fixture(scope="module")
def messages_client(gateway_url: str) -> anthropic.Anthropic:
    return anthropic_client(gateway_url, api_key="client-key")


@pytest.fixture(scope="module")
def template_client(serve, fake_backend_server) -> anthropic.Anthropic:
    _, fake_url = fake_backend_server
    url = serve(create_app(Config.model_validate({"models": [_entry("qwen3-t", QWEN3, fake_url)]})))
    return anthropic_client(url)


def usages(client: anthropic.Anthropic, model: str) -> tuple[dict, dict]:
    """The usage of a streamed reply's `message_start` and of its `message_delta`."""
    with client.messages.stream(model=model, max_tokens=64, messages=QUESTION) as stream:
        events = list(stream)
    [start] = [event for event in events if event.type == "message_start"]
    [delta] = [event for event in events if event.type == "message_delta"]
    return start.message.usage.to_dict(), delta.usage.to_dict()


def test_message_start_estimates_the_prompt_and_message_delta_has_the_backends_count(messages_client, fake):
    fake.script("Nine.")
    start, end = usages(messages_client, "qwen3")
    sent = fake.last_body["messages"]
    assert sent == QUESTION
    assert start["input_tokens"] == math.ceil(len(QUESTION[0]["content"]) / 4) > 0
    assert start["output_tokens"] == 0
    assert end["input_tokens"] == USAGE["prompt_tokens"] and end["output_tokens"] == USAGE["completion_tokens"]


def test_in_template_mode_message_start_estimates_the_rendered_prompt(template_client, fake):
    fake.script("Nine.")
    start, _ = usages(template_client, "qwen3-t")
    prompt = fake.last_body["prompt"]
    assert QUESTION[0]["content"] in prompt
    assert start["input_tokens"] == math.ceil(len(prompt) / 4)


@pytest.fixture(scope="module")
def counted_clients(serve, fake_backend_server) -> anthropic.Anthropic:
    """Models whose `message_start` tokens the server's tokenizer counts:
    `vllm-c` in chat mode, `qwen3-c` in template mode (both vLLM)."""
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1", "server": "vllm", "message_start_tokens": "tokenizer"}
    chat = {"name": "vllm-c", "backend": backend, "reasoning_parser": "qwen3", "tool_call_parser": "qwen25"}
    template = {**_entry("qwen3-c", QWEN3, fake_url), "backend": backend}
    url = serve(create_app(Config.model_validate({"models": [chat, template]})))
    return anthropic_client(url)


def _asked(fake) -> tuple[list[dict], list[dict]]:
    """The bodies of the tokenizer's requests, and of the others."""
    bodies = [body for _, body in fake.requests]
    counts = [body for body in bodies if "stream" not in body]
    return counts, [body for body in bodies if "stream" in body]


def test_message_start_has_the_tokenizers_count_where_the_model_asks_for_it(counted_clients, fake):
    fake.script("Nine.")
    fake.token_count = 321
    start, end = usages(counted_clients, "vllm-c")
    counts, generated = _asked(fake)
    assert start["input_tokens"] == 321  # vLLM's /tokenize of the messages, asked beside the generation
    assert [body["messages"] for body in counts] == [QUESTION] and len(generated) == 1
    assert end["input_tokens"] == USAGE["prompt_tokens"]


def test_in_template_mode_the_tokenizer_counts_the_rendered_prompt(counted_clients, fake):
    fake.script("Nine.")
    fake.token_count = 123
    start, _ = usages(counted_clients, "qwen3-c")
    counts, generated = _asked(fake)
    [prompt] = [body["prompt"] for body in generated]
    assert counts == [{"model": "qwen3-c", "prompt": prompt, "add_special_tokens": False}]
    assert start["input_tokens"] == 123


def test_a_tokenizer_count_that_is_no_count_falls_back_to_the_estimate(counted_clients, fake):
    fake.script("Nine.")
    fake.token_count = -1
    start, _ = usages(counted_clients, "vllm-c")
    assert start["input_tokens"] == math.ceil(len(QUESTION[0]["content"]) / 4)


def read(call_id: str, path: str) -> tuple[dict, dict]:
    """An assistant's call of `read` and the user's turn with its result."""
    call = {"type": "tool_use", "id": call_id, "name": "read", "input": {"path": path}}
    result = {"type": "tool_result", "tool_use_id": call_id, "content": f"the text of {path} " * 20}
    return {"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}


TOOLS = [
    {"name": name, "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    for name in ("read", "notes")
]
NOTE_CALL = {"type": "tool_use", "id": "toolu_note", "name": "notes", "input": {"path": "notes.txt"}}
NOTE_RESULT = {"type": "tool_result", "tool_use_id": "toolu_note", "content": "keep this note " * 20}
HISTORY = [
    {"role": "user", "content": "Read the files."},
    {"role": "assistant", "content": [NOTE_CALL]},
    {"role": "user", "content": [NOTE_RESULT]},
    *read("toolu_a", "a.py"),
    *read("toolu_b", "b.py"),
    *read("toolu_c", "c.py"),
]


def edited_turn(client: anthropic.Anthropic, fake, edits: list[dict], stream: bool, messages=HISTORY) -> dict:
    """The reply's `context_management` for a request with `edits`, streamed or not."""
    fake.script("Done.")
    body = {"model": "qwen3", "max_tokens": 64, "messages": messages, "tools": TOOLS}
    extra = {"context_management": {"edits": edits}}
    if not stream:
        return client.messages.create(**body, extra_body=extra).to_dict()["context_management"]
    events = list(client.messages.create(**body, stream=True, extra_body=extra))
    [delta] = [event for event in events if event.type == "message_delta"]
    return delta.to_dict()["context_management"]


def tool_results(fake) -> dict[str, str]:
    return {
        message["tool_call_id"]: message["content"]
        for message in fake.last_body["messages"]
        if message["role"] == "tool"
    }


@pytest.mark.parametrize("stream", [False, True])
def test_clear_tool_uses_clears_the_oldest_results_past_its_trigger(messages_client, fake, stream):
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 2},
        "keep": {"type": "tool_uses", "value": 1},
        "exclude_tools": ["notes"],
    }
    context = edited_turn(messages_client, fake, [edit], stream)
    [applied] = context["applied_edits"]
    assert applied["type"] == "clear_tool_uses_20250919" and applied["cleared_tool_uses"] == 2
    assert applied["cleared_input_tokens"] > 0
    results = tool_results(fake)
    assert results["toolu_a"] == results["toolu_b"] == CLEARED_RESULT
    assert results["toolu_c"] == HISTORY[-1]["content"][0]["content"]  # the last one, kept
    assert results["toolu_note"] == NOTE_RESULT["content"]  # an excluded tool's
    calls = [call for message in fake.last_body["messages"] for call in message.get("tool_calls") or []]
    assert {call["function"]["arguments"] for call in calls} != {"{}"}  # inputs stay without clear_tool_inputs


def test_clear_tool_inputs_empties_the_cleared_calls_inputs(messages_client, fake):
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 0},
        "keep": {"type": "tool_uses", "value": 1},
        "clear_tool_inputs": True,
    }
    edited_turn(messages_client, fake, [edit], False)
    calls = {
        call["id"]: call["function"]["arguments"]
        for message in fake.last_body["messages"]
        for call in message.get("tool_calls") or []
    }
    assert calls["toolu_note"] == calls["toolu_a"] == calls["toolu_b"] == "{}"
    assert calls["toolu_c"] != "{}"


@pytest.mark.parametrize(
    "options",
    [
        {},  # the default trigger: 100,000 input tokens, far above this history
        {"trigger": None, "keep": None},  # null: the defaults
        {"trigger": {"type": "tool_uses", "value": 0}, "clear_at_least": {"type": "input_tokens", "value": 100_000}},
    ],
)
def test_clear_tool_uses_below_its_trigger_or_short_of_clear_at_least_clears_nothing(messages_client, fake, options):
    context = edited_turn(messages_client, fake, [{"type": "clear_tool_uses_20250919", **options}], False)
    assert context == {"applied_edits": []}
    assert CLEARED_RESULT not in tool_results(fake).values()


def thought(text: str) -> dict:
    return {"type": "thinking", "thinking": text, "signature": "parsegate"}


THINKING_HISTORY = [
    {"role": "user", "content": "One?"},
    {"role": "assistant", "content": [thought("First thought."), {"type": "text", "text": "One."}]},
    {"role": "user", "content": "Two?"},
    {"role": "assistant", "content": [thought("Second thought."), {"type": "text", "text": "Two."}]},
    {"role": "user", "content": "Three?"},
]


@pytest.mark.parametrize("stream", [False, True])
def test_clear_thinking_keeps_the_last_turns_thinking(messages_client, fake, stream):
    context = edited_turn(messages_client, fake, [{"type": "clear_thinking_20251015"}], stream, THINKING_HISTORY)
    [applied] = context["applied_edits"]
    assert applied["type"] == "clear_thinking_20251015" and applied["cleared_thinking_turns"] == 1
    assert applied["cleared_input_tokens"] > 0
    answers = [message for message in fake.last_body["messages"] if message["role"] == "assistant"]
    assert [message.get("reasoning_content") for message in answers] == [None, "Second thought."]
    assert [message["content"] for message in answers] == ["One.", "Two."]


def test_clear_thinking_keep_all_clears_nothing(messages_client, fake):
    edit = {"type": "clear_thinking_20251015", "keep": "all"}
    assert edited_turn(messages_client, fake, [edit], False, THINKING_HISTORY) == {"applied_edits": []}
    answers = [message for message in fake.last_body["messages"] if message["role"] == "assistant"]
    assert [message.get("reasoning_content") for message in answers] == ["First thought.", "Second thought."]


@pytest.mark.parametrize(
    ("edit", "param"),
    [
        ({"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": "3"}}, "keep"),
        ({"type": "clear_tool_uses_20250919", "trigger": {"type": "turns", "value": 3}}, "trigger"),
        ({"type": "clear_tool_uses_20250919", "exclude_tools": "notes"}, "exclude_tools"),
        ({"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": -1}}, "keep"),
    ],
)
def test_a_malformed_edit_is_a_400_naming_its_option(messages_client, fake, edit, param):
    with pytest.raises(anthropic.BadRequestError) as raised:
        edited_turn(messages_client, fake, [edit], False)
    assert raised.value.body["error"]["message"].startswith(f"context_management.edits[0].{param}")
    assert fake.requests == []
