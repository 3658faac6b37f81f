"""Spell checkpoint-suffixed special tokens the bare way, before any stage.

Some checkpoints append one suffix to every structural token (Hunyuan Hy3
writes `<think:opensource>`, `</tool_call:opensource>`,
`<｜hy_eos:opensource｜>`; other builds another suffix). A format lists the
token names that may carry one (`think`, `tool_call`, …); this filter
rewrites `<NAME:SUFFIX>`, `</NAME:SUFFIX>` and `<｜NAME:SUFFIX｜>` to
`<NAME>`, `</NAME>` and `<｜NAME｜>`, so the format's markers are the bare
spellings whatever suffix the checkpoint uses. It holds back only a tail
that is still the start of such a token (at most `MAX_SUFFIX` characters
of suffix), so the cost is linear in the text.
"""

from __future__ import annotations

import re

MAX_SUFFIX = 64
_SUFFIX_CHARS = r"[^<>｜\s]"


class SuffixStripper:
    """`feed(text) -> text` and `finish() -> text`."""

    def __init__(self, names: tuple[str, ...]):
        self._names = names
        alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
        suffix = f":{_SUFFIX_CHARS}{{1,{MAX_SUFFIX}}}"
        self._token = re.compile(rf"<(/?)({alternatives}){suffix}>|<｜({alternatives}){suffix}｜>")
        self._partial = re.compile(rf"<(/|｜)?([a-z_]*)(:{_SUFFIX_CHARS}{{0,{MAX_SUFFIX}}}｜?)?")
        self._held_back = ""

    def feed(self, text: str) -> str:
        buf = self._held_back + text
        if "<" not in buf:
            self._held_back = ""
            return buf
        end = self._safe_end(buf)
        self._held_back = buf[end:]
        return self._token.sub(_bare, buf[:end])

    def finish(self) -> str:
        held, self._held_back = self._held_back, ""
        return held

    def _safe_end(self, buf: str) -> int:
        """Where the unfinished token at the end of `buf` starts, if any."""
        start = buf.rfind("<")
        match = self._partial.fullmatch(buf, start)
        if match is None:
            return len(buf)
        opener, name, suffix = match.groups()
        if suffix is None:
            return start if any(known.startswith(name) for known in self._names) else len(buf)
        closed_bar = suffix.endswith("｜")
        if name in self._names and (not closed_bar or opener == "｜"):
            return start
        return len(buf)


def _bare(match: re.Match) -> str:
    if match.group(3) is not None:
        return f"<｜{match.group(3)}｜>"
    return f"<{match.group(1)}{match.group(2)}>"
