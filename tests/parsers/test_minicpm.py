"""MiniCPM tool calls are plain-text XML: random elements, cut short or
malformed amid prose, lose no text and parse alike at any split, and a
call to an offered tool streams its name before its arguments end."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from parsers import make_pipeline
from parsers.core.events import CallArgs, CallStart
from tests.lossless import GREEK, assert_lossless_at_any_split

TOOLS = [
    {
        "type": "function",
        "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    }
]
WORDS = st.text(alphabet=GREEK, min_size=1, max_size=5)
NOISE = st.one_of(
    WORDS,
    st.sampled_from(
        [
            " ",
            "\n",
            "<",
            "&",
            "&amp;",
            "]]>",
            "<![CDATA[",
            "<func",
            "<function",
            "<param",
            "</param>",
            "</function>",
            "<functions>",
        ]
    ),
)
VALUES = st.one_of(WORDS, WORDS.map(lambda word: f"<![CDATA[{word}</param>]]>"))
PARAMETERS = st.tuples(st.sampled_from(['"q"', "'n'", "q", ""]), VALUES, st.booleans()).map(
    lambda p: f"<param name={p[0]}>{p[1]}" + ("</param>" if p[2] else "")
)
ELEMENTS = st.tuples(
    st.sampled_from(['"search"', "'search'", '"other"']),
    st.lists(st.one_of(PARAMETERS, NOISE), max_size=3),
    st.booleans(),
).map(lambda e: f"<function name={e[0]}>" + "".join(e[1]) + ("</function>" if e[2] else ""))


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(ELEMENTS, NOISE), min_size=1, max_size=6), data=st.data())
def test_any_mix_of_elements_loses_no_text_and_parses_alike_at_any_split(pieces, data):
    text = "".join(pieces)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    one_shot = assert_lossless_at_any_split(text, cuts, "minicpm5", TOOLS)
    assert all(name == "search" for name, _ in one_shot.tool_calls)


def test_a_call_streams_its_name_and_value_before_the_element_ends():
    pipeline = make_pipeline(None, "minicpm5", tools=TOOLS)
    events = pipeline.feed('<function name="search"><param name="q"><![CDATA[a < b')
    assert events[0] == CallStart(0, "search")
    assert "".join(event.text for event in events if isinstance(event, CallArgs)) == '{"q": "a < b'
