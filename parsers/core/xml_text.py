"""XML character data: the five predefined entities and character
references, decoded exactly as an XML parser would (`&amp;` is `&`,
`&#x41;` is `A`); any other `&` is text as written, unlike HTML, where
`&para` would become `¶`. CDATA sections (`<![CDATA[a < b]]>`) hold text
taken literally."""

from __future__ import annotations

import re

CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"

_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_UNFINISHED_REFERENCE = re.compile(r"&(?:#[0-9]*|#[xX][0-9a-fA-F]*|[^\t\n\f <&#;]{0,32})")
_REFERENCE = re.compile(r"&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));")


def unescape(text: str) -> str:
    """`text` with its entity and character references decoded."""
    if "&" not in text:
        return text
    return _REFERENCE.sub(_decoded, text)


def literal(text: str) -> str:
    """`text` escaped so that `unescape` gives it back unchanged (CDATA
    content joining character data that is decoded later)."""
    return text.replace("&", "&amp;")


def _decoded(match: re.Match) -> str:
    named, decimal, hexadecimal = match.groups()
    if named:
        return _NAMED[named]
    code = int(decimal) if decimal else int(hexadecimal, 16)
    return chr(code) if 0 < code <= 0x10FFFF else match.group()


def unfinished_reference_start(text: str) -> int:
    """Where a character reference that more text could still change starts
    in `text`, else `len(text)`: everything before it decodes the same
    whatever follows."""
    start = text.rfind("&")
    if start >= 0 and _UNFINISHED_REFERENCE.fullmatch(text, start):
        return start
    return len(text)
