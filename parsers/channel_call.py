"""Body grammar: a channel message addressed to a tool, whose body is a
block of calls in a format of its own.

     to=functions.get_weather<|message|><atem:function_calls>…</atem:function_calls><|eom|>   (Muse Glimmer)

The header, from the call start to `message`, names a recipient
(`functions.get_weather`); recipients in `not_tools` (`self`, `user`, …)
are not calls, and the tool-call stage returns such a message as content.
The body, up to one of `terminators`, is read by a nested `ToolCallParser`
of the `inner` format, and its calls are this message's calls, streamed as
they come. Body text before the first call is held back: a message that
holds no call goes out whole, as written, as content.
"""

from __future__ import annotations

import re

from parsers.events import CallArgs, CallEnd, CallStart, Event
from parsers.json_call import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING
from parsers.markers import marker_set
from parsers.tool_calls import ToolCallParser, ToolFormat

_RECIPIENT = re.compile(r"(?P<recipient>[^\s<]*)\s*")


class ChannelCall:
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
        self._inner_format = inner
        self._inner: ToolCallParser | None = None
        self._message = marker_set(message)
        self._terminators = marker_set(*terminators)
        self._not_tools = frozenset(not_tools)
        self._header: list[str] = []
        self._calls = 0
        self._before_first_call: list[str] = []

    def step(self, buf: str, pos: int) -> int:
        if self._inner is None:
            pos = self._step_header(buf, pos)
            if self._inner is None:
                return pos
        hit = self._terminators.search(buf, pos)
        end = hit.start if hit else self._terminators.safe_end(buf, pos)
        self._relay(self._inner.feed(buf[pos:end]))
        if hit is None:
            return end
        self.finish()
        return hit.end

    def finish(self) -> None:
        if self._inner is not None:
            self._relay(self._inner.finish())
        self.status = DONE if self._calls else FAILED

    def _step_header(self, buf: str, pos: int) -> int:
        hit = self._message.search(buf, pos)
        end = hit.start if hit else self._message.safe_end(buf, pos)
        self._header.append(buf[pos:end])
        header = "".join(self._header)
        match = _RECIPIENT.fullmatch(header)
        if match is None or len(header) > MAX_TOKEN_CHARS:
            self.status = FAILED
            return end
        if hit is None:
            return end
        if not match.group("recipient") or match.group("recipient") in self._not_tools:
            self.status = FAILED
            return hit.start
        self._inner = ToolCallParser(
            self._inner_format, tools=self._sink.tools, max_buffered_chars=self._sink.max_buffered_chars
        )
        return hit.end

    def _relay(self, events: list[Event]) -> None:
        """The nested parser's calls are this message's; its content is
        stray text, held back until the first call."""
        for event in events:
            kind = type(event)
            if kind is CallStart:
                if not self._calls and self._before_first_call:
                    self._sink.stray("".join(self._before_first_call))
                self._calls += 1
                self._sink.start(event.name)
            elif kind is CallArgs:
                self._sink.args(event.text)
            elif kind is CallEnd:
                self._sink.end()
            elif self._calls:
                self._sink.stray(event.text)
            else:
                self._before_first_call.append(event.text)
