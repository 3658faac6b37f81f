"""Random model outputs through the real gateway, streamed in random
pieces: random mixes of text, whitespace, markers, whole tool calls and
calls cut short. No 5xx, no error event, no hang (a 10 s client timeout),
and no text lost or duplicated: every letter the model wrote comes back
exactly once, in content, reasoning or call arguments."""

from __future__ import annotations

from collections import Counter

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
MESSAGES = [{"role": "user", "content": "Weather?"}]
# Words are upper case: no marker, key or function name contains an upper-case letter.
WORDS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=6)
MARKERS = st.sampled_from(["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_call>\n", "<|im_end|>", "<", "{"])
WHITESPACE = st.sampled_from([" ", "\n", "\n\n", "  \t"])


@st.composite
def calls(draw) -> str:
    """A whole call, or one cut inside its argument string."""
    city = draw(WORDS)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "' + city
    return call + ('"}}\n</tool_call>' if draw(st.booleans()) else "")


OUTPUTS = st.lists(st.one_of(WORDS, WORDS, MARKERS, WHITESPACE, calls()), min_size=1, max_size=25).map("".join)


def letters(text: str) -> Counter:
    return Counter(char for char in text if char.isupper())


@pytest.fixture(scope="module")
def client(gateway_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="unused", max_retries=0, timeout=10)


def test_random_outputs_lose_no_text(client, fake):
    @given(output=OUTPUTS, chunk_size=st.integers(min_value=1, max_value=7))
    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    def streams_every_letter_once(output, chunk_size):
        fake.script(output, chunk_size=chunk_size)
        returned, finish_reasons = [], []
        for chunk in client.chat.completions.create(model="qwen3", messages=MESSAGES, tools=TOOLS, stream=True):
            for choice in chunk.choices:
                delta = choice.delta
                returned += [delta.content or "", getattr(delta, "reasoning_content", None) or ""]
                returned += [call.function.arguments or "" for call in delta.tool_calls or ()]
                finish_reasons.append(choice.finish_reason)
        assert letters("".join(returned)) == letters(output), output
        assert finish_reasons[-1] in ("stop", "tool_calls")

    streams_every_letter_once()
