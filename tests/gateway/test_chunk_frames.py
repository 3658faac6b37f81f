"""A chat stream's text-only deltas take a short way (ChunkEncoder.text,
pieces framed once per choice): the bytes a client reads are those of the
general way, whatever the text, the choice and the reasoning's fields."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.api.chat import CONTENT_KEYS, ChunkEncoder

KEYS = st.sampled_from([CONTENT_KEYS, ("reasoning_content",), ("reasoning",), ("reasoning_content", "reasoning")])
TEXT = st.text(st.characters(exclude_categories=["Cs"]))  # what orjson encodes: no lone surrogates


@given(index=st.integers(0, 8), keys=KEYS, text=TEXT, model=st.text(min_size=1))
def test_a_text_only_chunk_is_the_chunk_of_its_delta(index, keys, text, model):
    encoder = ChunkEncoder(model)
    assert encoder.text(index, keys, text) == encoder.choice(index, dict.fromkeys(keys, text))


def test_a_model_named_like_the_hole_frames_its_text_the_same():
    encoder = ChunkEncoder("parsegate:hole")
    assert encoder.text(0, CONTENT_KEYS, "hi") == encoder.choice(0, {"content": "hi"})
