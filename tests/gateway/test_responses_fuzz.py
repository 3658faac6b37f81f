"""Random model outputs through `/v1/responses`, streamed in random pieces
(the outputs of tests/gateway/test_output_fuzz.py, in the same formats):
every stream ends in `response.completed`, each output item's done event
carries exactly what its deltas streamed, and no letter the model wrote is
lost or duplicated across reasoning, text and calls."""

from __future__ import annotations

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.config import Config
from tests.gateway.test_output_fuzz import FORMATS, letters, outputs
from tests.sdk_clients import openai_client

TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
EXAMPLES = 6  # per format


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, backend_url = fake_backend_server
    models = [
        {"name": tool, "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": reasoning, "tool_call_parser": tool}
        for reasoning, tool in FORMATS
    ]
    gateway = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(gateway)


def streamed_text(item: dict, deltas: list[str]) -> str:
    """What an item's deltas must add up to, from its complete form."""
    if item["type"] == "reasoning":
        return item["summary"][0]["text"]
    if item["type"] == "message":
        return item["content"][0]["text"]
    return item["arguments"]


@pytest.mark.parametrize("reasoning_parser, tool_parser", FORMATS)
def test_random_outputs_keep_every_letter_in_responses(client, fake, reasoning_parser, tool_parser):
    @given(output=outputs(reasoning_parser, tool_parser), chunk_size=st.integers(min_value=1, max_value=7))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def every_letter_once(output, chunk_size):
        fake.script(output, chunk_size=chunk_size)
        events = list(client.responses.create(model=tool_parser, input="Weather?", tools=TOOLS, stream=True))
        assert events[-1].type == "response.completed", output
        deltas: dict[str, list[str]] = {}
        for event in events:
            if event.type.endswith(".delta"):
                deltas.setdefault(event.item_id, []).append(event.delta)
        final = events[-1].response.to_dict()["output"]
        for item in final:
            assert "".join(deltas.get(item["id"], [])) == streamed_text(item, deltas.get(item["id"], []))
        returned = [streamed_text(item, []) + item.get("name", "") for item in final]
        assert letters("".join(returned)) == letters(output), output

    every_letter_once()


BEAM_INTERLEAVED = (  # found by the fuzz above: text streams between a call's start and its arguments
    ' to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">\nα'
    ' to=get_weather<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="city">\nβ\n'
    "</rfl:parameter><|call|>"
)


@pytest.mark.parametrize("chunk_size", range(1, 8))
def test_call_arguments_after_other_items_are_kept(client, fake, chunk_size):
    fake.script(BEAM_INTERLEAVED, chunk_size=chunk_size)
    events = list(client.responses.create(model="beam", input="Weather?", tools=TOOLS, stream=True))
    assert events[-1].type == "response.completed"
    final = events[-1].response.to_dict()["output"]
    returned = [streamed_text(item, []) + item.get("name", "") for item in final]
    assert letters("".join(returned)) == letters(BEAM_INTERLEAVED)
