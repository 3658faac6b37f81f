"""Regexes that cannot fail to match, typed so.

A pattern such as `\\s*` matches the empty string at any position, so its
`.match()` never returns None; the grammars skip blanks with
`_WHITESPACE.match(buf, pos).end()` on the hot path. `always_matching`
compiles such a pattern once, checks that it matches the empty string, and
hands back the very `re.Pattern` under a type whose `match` returns a
`re.Match`: the check costs nothing per call.
"""

from __future__ import annotations

import re
from typing import Protocol, cast


class AlwaysMatching(Protocol):
    """A compiled pattern that matches (maybe empty) wherever it is tried."""

    @property
    def pattern(self) -> str: ...

    def match(self, string: str, pos: int = 0, endpos: int = ...) -> re.Match[str]: ...


def always_matching(pattern: str, flags: int = 0) -> AlwaysMatching:
    """Compile `pattern`, which must match the empty string whatever
    surrounds it: a starred or optional body, not an anchor."""
    compiled = re.compile(pattern, flags)
    if compiled.match("") is None:
        raise ValueError(f"{pattern!r} does not match the empty string")
    return cast(AlwaysMatching, compiled)
