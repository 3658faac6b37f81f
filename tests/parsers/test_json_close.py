"""`JsonCloser`: JSON cut anywhere, fed in any fragments, closes into
valid JSON that keeps what was written; whole JSON passes as written."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from parsers.core.json_close import JsonCloser, closed_json

DOCUMENT = (
    '{"command": "echo hello", "n": [1, 2.5, -3e2, true, false, null], '
    '"o": {"k": "v\\n\\u00e9\\ud83d\\ude00", "empty": {}, "list": [[{"d": "x"}], []]}, "s": ""}'
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=12,
)


def fed(text: str, sizes: list[int]) -> str:
    closer, out, pos = JsonCloser(), [], 0
    for size in sizes:
        out.append(closer.feed(text[pos : pos + size]))
        pos += size
    out.append(closer.feed(text[pos:]))
    return "".join(out) + closer.close()


@given(json_values, st.data())
def test_every_cut_closes_into_json_at_every_split(value, data):
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    cut = data.draw(st.integers(0, len(text)))
    sizes = data.draw(st.lists(st.integers(1, 6), max_size=20))
    closed = fed(text[:cut], sizes)
    assert closed == closed_json(text[:cut])
    json.loads(closed)
    assert fed(text, sizes) == text


def test_each_prefix_of_a_document_keeps_what_was_written():
    for cut in range(len(DOCUMENT) + 1):
        orjson.loads(closed_json(DOCUMENT[:cut]))
    assert closed_json(DOCUMENT) == DOCUMENT
    assert closed_json('{"path": "a.py", "text": "def f(') == '{"path": "a.py", "text": "def f("}'
    assert closed_json('{"a": [1, 2.') == '{"a": [1, 2]}'
    assert closed_json('{"a": 1, "b": tr') == '{"a": 1}'  # a key whose value never completed is no argument
    assert closed_json('{"a": "x\\u00') == '{"a": "x"}'  # half an escape is dropped
    assert closed_json('{"a": "\\ud83d') == '{"a": ""}'  # a high surrogate waits for its low half
    assert closed_json("  ") == "{}"


def test_text_that_is_not_json_passes_as_written():
    for text in ("not json", '{"a": 1,}', '{"a": 1}}', "[1 2]"):
        assert fed(text, [1, 2, 3]) == text


def test_only_what_could_need_dropping_is_held():
    closer = JsonCloser()
    assert closer.feed('{"command": "echo') == '{"command": "echo'
    assert closer.feed(' hi", "time') == ' hi"'
    assert closer.feed('out": 1') == ', "timeout": 1'
    assert closer.close() == "}"
