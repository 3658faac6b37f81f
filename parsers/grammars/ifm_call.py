"""Body grammar: K2 Horizon's IFM tool calls, streamed block by block.

A block names the function and gives its arguments as tags (an
`<ifm|arg_type>` before a value is optional) or as JSON
(`{"name", "arguments"|"parameters"}`, `{"function": {…}}`, or an array)::

    <ifm|tool_call>get_weather
    <ifm|arg_key>city</ifm|arg_key>
    <ifm|arg_type>string</ifm|arg_type>
    <ifm|arg_value>Paris</ifm|arg_value>
    </ifm|tool_call>
    <ifm|tool_call>{"name": "search", "arguments": {"query": "x"}}</ifm|tool_call>

The template wraps a turn's calls in `<ifm|tool_calls>` … `</ifm|tool_calls>`.
The body starts at `<ifm|tool_call`, which begins both: after `>` it reads
one block (`parsers.grammars.ifm_block`), after `s>` a group of them. A group that
names no call is content as written.
"""

from __future__ import annotations

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING
from parsers.core.markers import cut_short
from parsers.grammars.ifm_block import BLOCK_OPEN, GROUP_CLOSE, IfmBlock

_WHITESPACE = always_matching(r"\s*")


class IfmCalls:
    """Reads one `<ifm|tool_call>` block or one `<ifm|tool_calls>` group,
    and is the `CallSink` of its blocks."""

    def __init__(self, sink):
        self.status = RUNNING
        self.call_open = False
        self.starts = 0
        self._sink = sink
        self._group: bool | None = None
        self._block: IfmBlock | None = None
        self._unclaimed: list[str] = []  # blocks of a group that named no call, before its first call

    @property
    def held_chars(self) -> int:
        return self._block.held_chars if self._block is not None else 0

    def step(self, buf: str, pos: int) -> int:
        if self._group is None:
            pos = self._read_kind(buf, pos)
        while self.status == RUNNING and self._group is not None:
            if self._block is None:
                new_pos = self._step_group(buf, pos)
                if new_pos is None:
                    return pos
                pos = new_pos
                continue
            pos = self._block.step(buf, pos)
            if self._block.status == RUNNING:
                return pos
            self._end_block()
        return pos

    def finish(self) -> None:
        """The text ended inside the body: the calls named so far stand."""
        if self.status != RUNNING:
            return
        if self._block is not None:
            self._block.finish()
            self._end_block()
        self.status = DONE if self.starts else FAILED

    # CallSink of the blocks.
    def start(self, name: str) -> None:
        if self._unclaimed:
            self._sink.stray("".join(self._unclaimed))
            self._unclaimed.clear()
        self.starts += 1
        self.call_open = True
        self._sink.start(name)

    def args(self, text: str) -> None:
        self._sink.args(text)

    def end(self) -> None:
        self.call_open = False
        self._sink.end()

    def parameter_types(self, name: str) -> dict:
        return self._sink.parameter_types(name)

    def _read_kind(self, buf: str, pos: int) -> int:
        """After `<ifm|tool_call`: `>` opens a block, `s>` a group."""
        if buf.startswith(">", pos):
            self._group, self._block = False, IfmBlock(self, "")
            return pos + 1
        if buf.startswith("s>", pos):
            self._group = True
            return pos + 2
        if not cut_short(buf, pos, "s>"):
            self.status = FAILED
        return pos

    def _step_group(self, buf: str, pos: int) -> int | None:
        """Between a group's blocks: blanks, then a block or the group's end."""
        blank_end = _WHITESPACE.match(buf, pos).end()
        if buf.startswith(BLOCK_OPEN, blank_end):
            end = blank_end + len(BLOCK_OPEN)
            self._block = IfmBlock(self, buf[pos:end])
            return end
        if buf.startswith(GROUP_CLOSE, blank_end):
            self.status = DONE if self.starts else FAILED
            return blank_end + len(GROUP_CLOSE)
        waiting = (
            blank_end == len(buf) or cut_short(buf, blank_end, BLOCK_OPEN) or cut_short(buf, blank_end, GROUP_CLOSE)
        )
        if waiting and blank_end - pos <= MAX_TOKEN_CHARS:
            return None
        self.status = DONE if self.starts else FAILED  # the group ends here; the rest is text
        return pos

    def _end_block(self) -> None:
        block, self._block = self._block, None
        assert block is not None, "called when a block ends"
        if block.status == FAILED and not self._group:
            self.status = FAILED  # the tool-call stage returns its text
            return
        text = block.text()
        if block.status == FAILED and not self.starts:
            self._unclaimed.append(text)
        elif text.strip():
            self._sink.stray(text)
        if not self._group:
            self.status = DONE
