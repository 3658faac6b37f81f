"""Random model outputs through the real gateway, streamed in random
pieces: random mixes of text, whitespace, markers, whole tool calls and
calls cut short, in the formats of several model families. No 5xx, no error
event, no hang (a 10 s client timeout), and no text lost or duplicated:
every letter the model wrote comes back exactly once, in content,
reasoning, call names or call arguments."""

from __future__ import annotations

from collections import Counter

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.app import create_app
from gateway.ops.config import Config
from parsers import reasoning_format, tool_format
from tests.sdk_clients import openai_client

pytestmark = pytest.mark.slow  # 3 to 10 s each

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
MESSAGES = [{"role": "user", "content": "Weather?"}]
# Words are Greek: no marker, key or function name of any format contains a Greek letter.
GREEK = "αβγδεζηθικλμνξοπρστυφχψω"
WORDS = st.text(alphabet=GREEK, min_size=1, max_size=6)
WHITESPACE = st.sampled_from([" ", "\n", "\n\n", "  \t"])
CITY = "@city@"  # where a call's argument value goes
FORMATS = [  # (reasoning parser, tool-call parser): JSON, named, tag, DSML, list, pythonic, XTML, IFM, Inkling and channel calls
    ("qwen3", "qwen25"),
    ("kimi_k2", "kimi_k2"),
    ("glm45", "glm45"),
    ("deepseek-v3", "deepseekv32"),
    ("qwen3", "mistral"),
    ("qwen3", "pythonic"),
    ("hunyuan", "hunyuan"),
    ("kimi_k3", "kimi_k3"),
    ("apertus2509", "apertus2509"),
    ("cohere_command4", "cohere_command4"),
    ("muse", "muse"),
    ("beam", "beam"),
    ("k2_horizon", "k2_horizon"),
    ("inkling", "inkling"),
]
EXAMPLES = 30  # per format


def markers(reasoning_parser: str, tool_parser: str) -> list[str]:
    """Every marker of the two formats."""
    tools, reasoning = tool_format(tool_parser), reasoning_format(reasoning_parser)
    found = [reasoning.start, reasoning.end, tools.call_start, tools.call_end, tools.section_start, tools.section_end]
    found += [
        *tools.other_call_starts,
        *tools.dropped_markers,
        *tools.end_of_turn,
        *reasoning.end_of_turn,
        *reasoning.answer_markers,
    ]
    return sorted({marker for marker in found if marker}) + ["<", "{", "\n"]


def calls(tool_parser: str) -> st.SearchStrategy[str]:
    """A whole call, or one cut inside its argument string."""
    template = tool_format(tool_parser).render_call("get_weather", '{"city": "' + CITY + '"}')
    whole, cut = template, template[: template.index(CITY) + len(CITY)]
    return st.tuples(st.sampled_from([whole, cut]), WORDS).map(lambda parts: parts[0].replace(CITY, parts[1]))


def outputs(reasoning_parser: str, tool_parser: str) -> st.SearchStrategy[str]:
    pieces = st.one_of(
        WORDS, WORDS, st.sampled_from(markers(reasoning_parser, tool_parser)), WHITESPACE, calls(tool_parser)
    )
    return st.lists(pieces, min_size=1, max_size=25).map("".join)


def letters(text: str) -> Counter:
    return Counter(char for char in text if char in GREEK)


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    """A gateway serving each format pair as the model named after its tool-call parser."""
    _, backend_url = fake_backend_server
    models = [
        {"name": tool, "backend": {"url": f"{backend_url}/v1"}, "reasoning_parser": reasoning, "tool_call_parser": tool}
        for reasoning, tool in FORMATS
    ]
    gateway = serve(create_app(Config.model_validate({"models": models})))
    return openai_client(gateway)


@pytest.mark.parametrize("reasoning_parser, tool_parser", FORMATS)
def test_random_outputs_lose_no_text(client, fake, reasoning_parser, tool_parser):
    @given(output=outputs(reasoning_parser, tool_parser), chunk_size=st.integers(min_value=1, max_value=7))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def streams_every_letter_once(output, chunk_size):
        fake.script(output, chunk_size=chunk_size)
        returned, finish_reasons = [], []
        for chunk in client.chat.completions.create(model=tool_parser, messages=MESSAGES, tools=TOOLS, stream=True):
            for choice in chunk.choices:
                delta = choice.delta
                returned += [delta.content or "", getattr(delta, "reasoning_content", None) or ""]
                for call in delta.tool_calls or ():
                    returned += [call.function.name or "", call.function.arguments or ""]
                finish_reasons.append(choice.finish_reason)
        assert letters("".join(returned)) == letters(output), output
        assert finish_reasons[-1] in ("stop", "tool_calls")

    streams_every_letter_once()
