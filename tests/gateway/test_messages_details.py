"""Anthropic Messages details for coding agents (issue 44): a streamed
reply's `message_start` carries an estimate of the prompt's tokens (one
per four characters of the prompt as sent upstream: the rendered prompt in
template mode), and its `message_delta` the backend's own count. Through
the anthropic SDK against the real gateway in front of the fake backend."""

from __future__ import annotations

import math

import anthropic
import pytest

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
