"""Remove end-of-turn tokens (`<|im_end|>`, `</s>`, `<|eot_id|>`…) from the
raw text before any stage sees it. Backends asked to keep special tokens
may leave one at the end of a turn; it is never content or reasoning."""

from __future__ import annotations

from parsers.core.markers import marker_set


class EndOfTurnFilter:
    """`feed(text) -> text` and `finish() -> text`, holding back only a
    tail that could start a token."""

    def __init__(self, tokens: tuple[str, ...]):
        self._tokens = marker_set(*tokens)
        self._held_back = ""

    @property
    def markers(self) -> tuple[str, ...]:
        return self._tokens.markers

    @property
    def holds_text(self) -> bool:
        """Whether text that may start a token is held back."""
        return bool(self._held_back)

    def feed(self, text: str) -> str:
        if not self._held_back and not self._tokens.may_start_in(text):
            return text
        buf = self._held_back + text
        pieces = []
        pos = 0
        while (hit := self._tokens.search(buf, pos)) is not None:
            pieces.append(buf[pos : hit.start])
            pos = hit.end
        end = self._tokens.safe_end(buf, pos)
        pieces.append(buf[pos:end])
        self._held_back = buf[end:]
        return "".join(pieces)

    def finish(self) -> str:
        held, self._held_back = self._held_back, ""
        return held
