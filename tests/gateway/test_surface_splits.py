"""The Messages (`/v1/messages`) and Responses (`/v1/responses`) surfaces
at every split of the backend's stream, for every registered parser name
(alone and with its family's other parser), through the real gateway and
the official SDKs.

Two kinds of model output, built from each format's own data:
- a well-formed turn (reasoning, one call as the format renders it, then
  prose), streamed in 1, 2 and 3-character pieces and whole: every stream
  ends in the same message as the non-streamed reply, text blocks hold the
  prose and nothing of the markers, the call's input is the same JSON at
  every split;
- random mixes of the format's markers, prose and whole or cut calls (the
  vocabulary of tests/parsers/test_split_invariance.py), a few per pair at
  random piece sizes: the streamed result equals the non-streamed one.
  Mixes that leave a call with arguments that are not a JSON object are
  drawn again: a Messages stream has sent their fragments already (the
  SDK heals or rejects them), where the whole reply says `{}`.
"""

from __future__ import annotations

import re

import anthropic
import openai
import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import reasoning_format, tool_format
from tests.parsers.test_split_invariance import _pairs, outputs, parse, vocabulary
from tests.sdk_clients import anthropic_client, openai_client

PAIRS = _pairs()
THOUGHT = "Thinking it over."
PROSE = "Let me check."
ARGUMENTS = {"city": "Paris", "days": 2}
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]
SPLITS = (1, 2, 3, 1000)
# Anthropic's `toolu_` id, a model family's own (ParsePlan.call_id) that Anthropic's
# pattern takes (Mistral's 9 letters and digits), or one encoded to it (Kimi K2's
# `functions.NAME:N`, Kimi K3's `NAME:N`: gateway/api/messages_ids.py)
TOOL_USE_ID = re.compile(r"toolu_[0-9a-f]{24}|[A-Za-z0-9]{9}|toolu_enc_[A-Za-z0-9_-]+")
MIXES = 2  # random outputs per pair and surface


def model(pair: tuple[str | None, str | None]) -> str:
    reasoning, tool = pair
    return f"{reasoning or '-'}+{tool or '-'}"


def well_formed(reasoning: str | None, tool: str | None) -> tuple[str, str]:
    """The raw text of a well-formed turn, and the text its reply must carry
    (a format that keeps its reasoning in content keeps its markers there:
    that format's own contract)."""
    text, expected_text = "", PROSE
    if reasoning:
        fmt = reasoning_format(reasoning)
        if fmt.separates:
            text = f"{fmt.start}{THOUGHT}{fmt.end}"
        else:  # the template wrote the start marker; the parser puts it back
            text = f"{THOUGHT}{fmt.end}"
            expected_text = f"{fmt.start}{THOUGHT}{fmt.end}{PROSE}"
    if tool:
        text += tool_format(tool).render_call("get_weather", '{"city": "Paris", "days": 2}')
        if tool_format(tool).drops_text_after_calls:  # DeepSeek: as the peers, prose after the calls goes
            expected_text = expected_text.removesuffix(PROSE)
    return text + PROSE, expected_text


@pytest.fixture(scope="module")
def gateway(serve, fake_backend_server) -> str:
    """One model per parser pair, named after it, on the scripted backend."""
    _, backend_url = fake_backend_server
    models = [
        {
            "name": model(pair),
            "backend": {"url": f"{backend_url}/v1", "model": "raw"},
            "reasoning_parser": pair[0] or "none",
            "tool_call_parser": pair[1] or "none",
        }
        for pair in PAIRS
    ]
    return serve(create_app(Config.model_validate({"models": models})))


@pytest.fixture(scope="module")
def messages_client(gateway) -> anthropic.Anthropic:
    return anthropic_client(gateway)


@pytest.fixture(scope="module")
def responses_client(gateway) -> openai.OpenAI:
    return openai_client(gateway)


def message_blocks(message) -> list[tuple]:
    """A message's blocks without their ids (tool input as an object)."""
    out = []
    for block in message.content:
        if block.type == "tool_use":
            assert TOOL_USE_ID.fullmatch(block.id), block.id
            out.append(("tool_use", block.name, block.input))
        elif block.type == "thinking":
            out.append(("thinking", block.thinking, block.signature))
        else:
            out.append((block.type, block.text))
    return out


def messages_both_ways(client: anthropic.Anthropic, name: str) -> tuple[tuple, tuple]:
    """(streamed, non-streamed): each as (blocks, stop_reason)."""
    request = {"model": name, "max_tokens": 1000, "messages": [{"role": "user", "content": "Weather?"}]}
    request["tools"] = ANTHROPIC_TOOLS
    with client.messages.stream(**request) as stream:
        streamed = stream.get_final_message()
    whole = client.messages.create(**request)
    return (message_blocks(streamed), streamed.stop_reason), (message_blocks(whole), whole.stop_reason)


def response_items(output: list[dict]) -> list[dict]:
    """Output items without their ids (arguments as an object)."""
    items = []
    for item in output:
        item = {key: value for key, value in item.items() if key not in ("id", "call_id")}
        if item["type"] == "function_call":
            item["arguments"] = openai_json(item["arguments"])
        items.append(item)
    return items


def is_object(text: str) -> bool:
    try:
        return isinstance(orjson.loads(text), dict)
    except orjson.JSONDecodeError:
        return False


def openai_json(text: str):
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def responses_both_ways(client: openai.OpenAI, name: str) -> tuple[tuple, tuple]:
    """(streamed, non-streamed): each as (items, status). The streamed items
    are checked against their own deltas first."""
    request = {"model": name, "input": "Weather?", "tools": RESPONSES_TOOLS}
    events = list(client.responses.create(stream=True, **request))
    final = events[-1].response.to_dict()
    assert events[-1].type in ("response.completed", "response.incomplete"), final
    deltas: dict[str, list[str]] = {}
    for event in events:
        if event.type.endswith(
            (".output_text.delta", ".reasoning_summary_text.delta", ".function_call_arguments.delta")
        ):
            deltas.setdefault(event.item_id, []).append(event.delta)
    for item in final["output"]:
        streamed = "".join(deltas.get(item["id"], ()))
        if item["type"] == "function_call":
            assert streamed == item["arguments"]
        elif item["type"] == "message":
            assert streamed == item["content"][0]["text"]
        elif item["type"] == "reasoning":
            assert streamed == item["summary"][0]["text"]
    whole = client.responses.create(**request).to_dict()
    return (response_items(final["output"]), final["status"]), (response_items(whole["output"]), whole["status"])


def message_parts(blocks: list[tuple]) -> tuple[str, str, list]:
    """(thinking, text, tool inputs) of a message's blocks."""
    thinking = "".join(block[1] for block in blocks if block[0] == "thinking")
    text = "".join(block[1] for block in blocks if block[0] == "text")
    return thinking, text, [block[1:] for block in blocks if block[0] == "tool_use"]


def response_parts(items: list[dict]) -> tuple[str, str, list]:
    """(reasoning, text, calls) of a response's items."""
    reasoning = "".join(item["summary"][0]["text"] for item in items if item["type"] == "reasoning")
    text = "".join(item["content"][0]["text"] for item in items if item["type"] == "message")
    calls = [(item["name"], item["arguments"]) for item in items if item["type"] == "function_call"]
    return reasoning, text, calls


SURFACES = {
    "messages": (messages_both_ways, message_parts, "messages_client", ("end_turn", "tool_use")),
    "responses": (responses_both_ways, response_parts, "responses_client", ("completed",)),
}


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("pair", PAIRS, ids=model)
def test_well_formed_turn_at_every_split(request, fake, surface, pair):
    both_ways, parts, client_fixture, ends = SURFACES[surface]
    client = request.getfixturevalue(client_fixture)
    text, expected_text = well_formed(*pair)
    replies = []
    for size in SPLITS:
        fake.script(text, chunk_size=size)
        streamed, whole = both_ways(client, model(pair))
        assert streamed == whole, size
        replies.append(streamed)
    assert all(reply == replies[0] for reply in replies)
    content, end = replies[0]
    reasoning, prose, calls = parts(content)
    assert end in ends
    assert prose.strip() == expected_text.strip()  # no marker text in the text
    expected_reasoning = THOUGHT if pair[0] and reasoning_format(pair[0]).separates else ""
    assert reasoning.strip() == expected_reasoning
    assert calls == ([("get_weather", ARGUMENTS)] if pair[1] else [])


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("pair", PAIRS, ids=model)
def test_random_outputs_stream_like_the_whole_reply(request, fake, surface, pair):
    both_ways, _, client_fixture, _ = SURFACES[surface]
    client = request.getfixturevalue(client_fixture)
    markers, calls = vocabulary(*pair)

    @settings(max_examples=MIXES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(output=outputs(markers, calls), size=st.integers(1, 6))
    def streams_like_the_whole_reply(output, size):
        assume(all(is_object(arguments) for _, arguments in parse(*pair, [output])[2]))
        fake.script(output, chunk_size=size)
        streamed, whole = both_ways(client, model(pair))
        assert streamed == whole, output

    streams_like_the_whole_reply()
