"""Random model outputs through the real gateway, streamed in random
pieces: random mixes of text, whitespace, markers, whole tool calls and
calls cut short, in the formats of two model families. No 5xx, no error
event, no hang (a 10 s client timeout), and no text lost or duplicated:
every letter the model wrote comes back exactly once, in content,
reasoning, call names or call arguments."""

from __future__ import annotations

from collections import Counter

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import reasoning_format, tool_format

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
MESSAGES = [{"role": "user", "content": "Weather?"}]
# Words are upper case: no marker, key or function name contains an upper-case letter.
WORDS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=6)
WHITESPACE = st.sampled_from([" ", "\n", "\n\n", "  \t"])
CITY = "\x00"  # where a call's argument value goes


SERVED = [("qwen3", "qwen3", "qwen25"), ("kimi", "kimi_k2", "kimi_k2")]  # test config: model, its two parsers


def markers(reasoning_parser: str, tool_parser: str) -> list[str]:
    """Every marker of the two formats."""
    tools, reasoning = tool_format(tool_parser), reasoning_format(reasoning_parser)
    found = [reasoning.start, reasoning.end, tools.call_start, tools.call_end, tools.section_start, tools.section_end]
    found += [*tools.other_call_starts, *tools.dropped_markers, *tools.end_of_turn, *reasoning.end_of_turn]
    return sorted({marker for marker in found if marker}) + ["<", "{", "\n"]


def calls(tool_parser: str) -> st.SearchStrategy[str]:
    """A whole call, or one cut inside its argument string."""
    template = tool_format(tool_parser).render_call("get_weather", '{"city": "' + CITY + '"}')
    whole, cut = template, template[: template.index(CITY) + 1]
    return st.tuples(st.sampled_from([whole, cut]), WORDS).map(lambda parts: parts[0].replace(CITY, parts[1]))


def outputs(reasoning_parser: str, tool_parser: str) -> st.SearchStrategy[str]:
    pieces = st.one_of(WORDS, WORDS, st.sampled_from(markers(reasoning_parser, tool_parser)), WHITESPACE, calls(tool_parser))
    return st.lists(pieces, min_size=1, max_size=25).map("".join)


def letters(text: str) -> Counter:
    return Counter(char for char in text if char.isupper())


@pytest.fixture(scope="module")
def client(gateway_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="unused", max_retries=0, timeout=10)


@pytest.mark.parametrize("served, reasoning_parser, tool_parser", SERVED)
def test_random_outputs_lose_no_text(client, fake, served, reasoning_parser, tool_parser):
    @given(output=outputs(reasoning_parser, tool_parser), chunk_size=st.integers(min_value=1, max_value=7))
    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    def streams_every_letter_once(output, chunk_size):
        fake.script(output, chunk_size=chunk_size)
        returned, finish_reasons = [], []
        for chunk in client.chat.completions.create(model=served, messages=MESSAGES, tools=TOOLS, stream=True):
            for choice in chunk.choices:
                delta = choice.delta
                returned += [delta.content or "", getattr(delta, "reasoning_content", None) or ""]
                for call in delta.tool_calls or ():
                    returned += [call.function.name or "", call.function.arguments or ""]
                finish_reasons.append(choice.finish_reason)
        assert letters("".join(returned)) == letters(output), output
        assert finish_reasons[-1] in ("stop", "tool_calls")

    streams_every_letter_once()
