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
