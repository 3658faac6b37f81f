"""dots.llm tool calls: random blocks of invokes or JSON, cut short or
malformed amid text, lose no text and parse alike at any split."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lossless import GREEK, assert_lossless_at_any_split

WORDS = st.text(alphabet=GREEK, min_size=1, max_size=5)
NOISE = st.one_of(
    WORDS, st.sampled_from([" ", "\n", "<", "{", "<inv", "<dots_function", "</parameter>", "</invoke>", "<invoke>"])
)
PARAMETERS = st.tuples(st.sampled_from(['"q"', "q", "'n'"]), WORDS, st.booleans()).map(
    lambda p: f"<parameter name={p[0]}>{p[1]}" + ("</parameter>\n" if p[2] else "")
)
INVOKES = st.tuples(
    st.sampled_from(['"search"', "note"]), st.lists(st.one_of(PARAMETERS, NOISE), max_size=3), st.booleans()
).map(lambda i: f"<invoke name={i[0]}>\n" + "".join(i[1]) + ("</invoke>\n" if i[2] else ""))
JSON_CALL = WORDS.map(lambda word: '{"name": "search", "arguments": {"q": "' + word + '"}}')
BLOCKS = st.tuples(
    st.one_of(st.lists(INVOKES, min_size=1, max_size=3).map("".join), JSON_CALL, NOISE), st.booleans()
).map(lambda b: "<dots_function_call>\n" + b[0] + ("</dots_function_call>" if b[1] else ""))


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(BLOCKS, NOISE), min_size=1, max_size=6), data=st.data())
def test_any_mix_of_blocks_loses_no_text_and_parses_alike_at_any_split(pieces, data):
    text = "".join(pieces)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    assert_lossless_at_any_split(text, cuts, "dots")
