"""The check the format fuzz tests share: a text parses the same whole and
cut at `cuts`, and every letter of `alphabet` it holds comes back once, in
content, call names or arguments."""

from __future__ import annotations

from collections import Counter

from parsers import ParseResult, make_pipeline

GREEK = "αβγδεζηθικλμνξοπρστυφχψω"  # in no marker, key or function name


def parse_in_pieces(text: str, bounds: list[int], tool_call_parser: str, tools: list[dict] | None) -> ParseResult:
    pipeline, result = make_pipeline(None, tool_call_parser, tools=tools), ParseResult()
    for start, end in zip(bounds, bounds[1:], strict=False):
        result.add(pipeline.feed(text[start:end]))
    result.add(pipeline.finish())
    return result


def assert_lossless_at_any_split(
    text: str, cuts: list[int], tool_call_parser: str, tools: list[dict] | None = None
) -> ParseResult:
    """The one-shot parse, once checked against the split one and for lost letters."""
    one_shot = parse_in_pieces(text, [0, len(text)], tool_call_parser, tools)
    split = parse_in_pieces(text, [0, *cuts, len(text)], tool_call_parser, tools)
    assert split.to_json() == one_shot.to_json()
    returned = (one_shot.content or "") + "".join(name + arguments for name, arguments in one_shot.tool_calls)
    assert Counter(c for c in returned if c in GREEK) == Counter(c for c in text if c in GREEK)
    return one_shot
