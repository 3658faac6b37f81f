"""Find markers in streamed text, holding back only true prefixes of markers.

A `MarkerSet` is built once per set of marker strings (and cached), then
shared by every parser that uses it. It answers two questions about a
buffer, each in one pass over the unread part:

- `search(buf, pos)`: where is the earliest marker at or after `pos`?
- `safe_end(buf, pos)`: up to where can text be released, because no
  marker can start there, whatever arrives next?

Like httpx's line decoder, which holds back only a trailing ``\\r``, the
held-back tail is never longer than the longest marker minus one, and only
when it really is a prefix of some marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from parsers.core.always_matching import always_matching


class Hit(NamedTuple):
    start: int
    end: int
    marker: str


class MarkerSet:
    """An immutable set of literal markers with precomputed prefixes."""

    __slots__ = ("markers", "_pattern", "_prefixes", "_first_char_pattern", "_longest", "may_start_in")

    def __init__(self, markers: tuple[str, ...]):
        self.markers = markers
        # Longest first, so that at one position the longer marker wins
        # (`<tool_call>\n` over `<tool_call>`).
        ordered = sorted(markers, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(m) for m in ordered))
        self._prefixes = frozenset(m[:i] for m in markers for i in range(1, len(m)))
        self._first_char_pattern = re.compile(
            "[" + "".join(re.escape(c) for c in sorted({m[0] for m in markers})) + "]"
        )
        self._longest = max(len(m) for m in markers)
        # `may_start_in(buf[, pos])`: whether any marker, or the start of one,
        # could be in `buf` (from `pos`): a match, else None. One C-speed
        # scan, called with no Python frame, so that text with none passes
        # without further work.
        self.may_start_in: Callable[..., re.Match[str] | None] = self._first_char_pattern.search

    def search(self, buf: str, pos: int = 0) -> Hit | None:
        match = self._pattern.search(buf, pos)
        if match is None:
            return None
        return Hit(match.start(), match.end(), match.group())

    def remove(self, text: str) -> str:
        """`text` without any of the markers, in one pass."""
        return self._pattern.sub("", text)

    def safe_end(self, buf: str, pos: int = 0) -> int:
        """Index before which `buf[pos:]` holds no (partial) marker, assuming
        `search` found none: the start of the longest suffix that is a
        proper prefix of a marker, else `len(buf)`."""
        n = len(buf)
        candidate = self._first_char_pattern.search(buf, max(pos, n - self._longest + 1))
        while candidate is not None:
            start = candidate.start()
            if buf[start:] in self._prefixes:
                return start
            candidate = self._first_char_pattern.search(buf, start + 1)
        return n


@lru_cache(maxsize=256)
def marker_set(*markers: str) -> MarkerSet:
    """The shared `MarkerSet` for these markers (order does not matter)."""
    return MarkerSet(tuple(sorted(set(markers))))


def cut_short(buf: str, pos: int, marker: str) -> bool:
    """Whether `buf` ends at `pos` with a proper prefix of `marker` (empty
    included): the text may still become `marker`. Copies at most
    `len(marker)` characters, however long `buf` is."""
    return len(buf) - pos < len(marker) and marker.startswith(buf[pos:])


_BLANKS = always_matching(r"\s*")


def only_closes_may_follow(buf: str, pos: int, closes: tuple[str, ...], starts: tuple[str, ...] = ()) -> bool:
    """Whether `buf[pos:]` is, or may still become, some of `closes` in
    their order, with blanks around them, and nothing else: a value whose
    close tag was left out, at the end of the output (`closes_after_value`
    in `parsers.core.tag_syntax`); or, with `starts`, those closes and then
    the start of a next call (`closes_then_start` says which)."""
    for marker in closes:
        pos = _BLANKS.match(buf, pos).end()
        if buf.startswith(marker, pos):
            pos += len(marker)
        elif cut_short(buf, pos, marker):
            return True
    pos = _BLANKS.match(buf, pos).end()
    return pos == len(buf) or any(buf.startswith(start, pos) or cut_short(buf, pos, start) for start in starts)


def closes_then_start(buf: str, pos: int, closes: tuple[str, ...], starts: tuple[str, ...]) -> bool:
    """Whether `buf[pos:]` holds the first of `closes` (and any of the rest,
    in order, with blanks around them) and then, whole, one of `starts`: a
    value whose close tag was left out, before the next call."""
    for marker in closes:
        pos = _BLANKS.match(buf, pos).end()
        if buf.startswith(marker, pos):
            pos += len(marker)
    pos = _BLANKS.match(buf, pos).end()
    return any(buf.startswith(start, pos) for start in starts)
