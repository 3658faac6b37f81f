"""Body grammar: a channel message addressed to a tool, whose body is a
block of calls in a format of its own.

     to=functions.get_weather<|message|><atem:function_calls>…</atem:function_calls><|eom|>   (Muse Glimmer)

The header, from the call start to `message`, names a recipient
(`functions.get_weather`); recipients in `not_tools` (`self`, `user`, …)
are not calls, and the tool-call stage returns such a message as content.
The body, up to one of `terminators` (one inside an open value is handed
to the call's grammar, whose `closes_after_value` may make it text), is
read the way a `ToolCallParser` of the `inner` format would read it (its
section markers, call start, dropped markers and body grammar; it has no
call end): each call the body grammar reports is this message's, streamed
as it comes; text outside the calls is content, a whitespace-only run
between calls and markers is dropped, and a call not yet named when it
turns out malformed, or when it holds back more than the stage's buffer
cap, goes out as content. Reading
the body in place, rather than through a nested parser, keeps its cost
per chunk that of any tag format. Body text before the first call is held
back: a message that holds no call goes out whole, as written, as content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.core.always_matching import always_matching
from parsers.core.between_calls import BetweenCalls
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, HoldingCallBody
from parsers.core.markers import Hit, marker_set

if TYPE_CHECKING:  # the inner format's markers and body are read, not its stage
    from parsers.stages.tool_calls import ToolFormat

_RECIPIENT = always_matching(r"(?P<recipient>[^\s<]*)\s*")


class ChannelCall(BetweenCalls):
    def __init__(
        self,
        sink,
        *,
        inner: ToolFormat,
        terminators: tuple[str, ...],
        message: str = "<|message|>",
        not_tools: tuple[str, ...] = (),
    ):
        self.status = RUNNING
        self._sink = sink
        # The call grammar's CallSink: arguments and schema types go straight
        # to the stage; a call's start and end pass through `start`/`end`.
        self.args = sink.args
        self.parameter_types = sink.parameter_types
        self.body_unmarked = False  # a channel's call always has its header
        self._inner = inner
        self._message = marker_set(message)
        self._terminators = marker_set(*terminators)
        self._not_tools = frozenset(not_tools)
        self._header: list[str] | None = []  # None once the header is read
        self._init_between(
            (inner.call_start, *inner.dropped_markers),
            (inner.section_start,) if inner.section_start else (),
            (inner.section_end,) if inner.section_end else (),
        )
        self._held_back = ""
        self._call: HoldingCallBody | None = None  # the body grammar of the call being read
        self._named = False  # whether that call has started
        self._tentative: list[str] = []  # its text while it has not
        self._tentative_chars = 0
        self._calls = 0
        self._before_first_call: list[str] = []
        self._cap = sink.max_buffered_chars

    def step(self, buf: str, pos: int) -> int:
        if self._header is not None:
            pos = self._step_header(buf, pos)
            if self._header is not None:
                return pos
        while True:
            hit = self._terminators.search(buf, pos)
            end = hit.start if hit else self._terminators.safe_end(buf, pos)
            self._read(self._held_back + buf[pos:end])
            if hit is None:
                return end
            if self._call is not None and getattr(self._call, "in_value", False):
                # A terminator inside an open value: its call's grammar
                # decides whether it is the value's text (`closes_after_value`).
                self._held_back += hit.marker
                pos = hit.end
                continue
            self.finish()
            return hit.end

    def _read(self, text: str) -> None:
        """The body's text up to a terminator (or to what may begin one)."""
        at = 0
        while at < len(text):
            new_at = self._step_text(text, at) if self._call is None else self._step_call(text, at)
            if new_at is None:
                return
            at = new_at
        self._held_back = ""

    def finish(self) -> None:
        held, self._held_back = self._held_back, ""
        if self._call is not None:
            if not self._named:
                self._tentative.append(held)
            self._call.finish()
            self._end_call()
        elif self._header is None:
            self._emit_text(held)
        self.status = DONE if self._calls else FAILED

    def _step_header(self, buf: str, pos: int) -> int:
        """The recipient up to `<|message|>`. Only the recipient's own
        characters are consumed before `<|message|>` comes, and a header
        that cannot be one fails at the recipient's end, so that what
        follows (say the next message's ` to=…`) is read again as text."""
        hit = self._message.search(buf, pos)
        end = hit.start if hit else self._message.safe_end(buf, pos)
        parts = self._header
        assert parts is not None, "called while the header is read"
        read = "".join(parts)
        header = read + buf[pos:end]
        match = _RECIPIENT.match(header)
        recipient_end = pos + match.end("recipient") - len(read)
        if match.end() < len(header) or len(header) > MAX_TOKEN_CHARS:
            self.status = FAILED
            return recipient_end
        if hit is None:
            parts.append(buf[pos:recipient_end])
            return recipient_end
        if not match.group("recipient") or match.group("recipient") in self._not_tools:
            self.status = FAILED
            return hit.start
        self._header = None
        return hit.end

    # CallSink: the body grammar reports its call through these.
    def start(self, name: str) -> None:
        if not self._calls and self._before_first_call:
            self._sink.stray("".join(self._before_first_call))
        self._calls += 1
        self._named = True
        self._gap = ""
        self._sink.start(name)

    def end(self) -> None:
        self._sink.end()
        self._at_boundary = True

    def stray(self, text: str) -> None:
        """Text of the body that belongs to no call: content, held back
        until the first call."""
        if self._calls:
            self._sink.stray(text)
        else:
            self._before_first_call.append(text)

    def _at_marker(self, hit: Hit) -> int | None:
        if hit.marker != self._inner.call_start:
            self._passed(hit.marker)
            return hit.end
        self._call = self._inner.body(self)
        self._named = False
        self._tentative = [hit.marker]
        self._tentative_chars = len(hit.marker)
        return hit.end

    def _step_call(self, buf: str, pos: int) -> int | None:
        call = self._call
        assert call is not None, "called while a call is read"
        new_pos = call.step(buf, pos)
        if not self._named:
            self._tentative.append(buf[pos:new_pos])
            self._tentative_chars += new_pos - pos
        if call.status in (DONE, FAILED):
            self._end_call()
            return new_pos
        held = call.held_chars if self._named else self._tentative_chars
        if self._cap is not None and len(buf) - new_pos + held > self._cap:
            if self._named:
                call.finish()  # keep the call as written so far
            self._end_call()  # a call not yet named goes out as content
            return new_pos  # what the call held back is read again, as text
        self._held_back = buf[new_pos:]
        return None

    def _end_call(self) -> None:
        if not self._named:
            self.stray(self._gap + "".join(self._tentative))
            self._gap = ""
            self._at_boundary = False
        self._tentative = []
        self._call = None

    def _content(self, text: str) -> None:
        self.stray(text)
