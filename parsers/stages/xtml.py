"""The reasoning stage for XTML channels (Kimi K3).

K3 writes its reply as channels framed by the special tokens `<|open|>`,
`<|close|>` and `<|sep|>`::

    <|open|>think<|sep|>Need weather.<|close|>think<|sep|>
    <|open|>response<|sep|>Checking.<|close|>response<|sep|>
    <|open|>tools<|sep|>…<|close|>tools<|sep|>
    <|close|>message<|sep|>

- The think channel is reasoning. Templates with thinking on prefill its
  open marker, so the reply then starts inside it (also when no request
  says: thinking is on by default); an echoed open marker is dropped.
- The response channel is content: its open and close markers, and the
  message close, are removed wherever they stand.
- From the tools channel's open marker on, everything is passed on
  verbatim, marker included, for the tool-call stage.

Reasoning ends at the think close, also when its `<|sep|>` is missing, or
at the first marker of another channel (the model skipped or cut its
thinking): a response or tools open, a response or message close. Text
already read as reasoning stays reasoning (it may have been streamed).
A think close outside reasoning is dropped, never content. A marker cut
short by the end of the output (`max_tokens` stopping after `<|close|>`
or `<|open|>response`) is dropped; a shorter tail such as `<` is text.
"""

from __future__ import annotations

from parsers.core.events import Content, Event
from parsers.core.markers import MarkerSet, cut_short, marker_set
from parsers.stages.reasoning import ReasoningEmitter

SEP = "<|sep|>"
CONTROL_TOKENS = ("<|open|>", "<|close|>")
RESPONSE_OPEN = "<|open|>response<|sep|>"
RESPONSE_CLOSE = "<|close|>response<|sep|>"
MESSAGE_CLOSE = "<|close|>message<|sep|>"
WRAPPERS = (RESPONSE_OPEN, RESPONSE_CLOSE, MESSAGE_CLOSE)


class XtmlReasoningParser(ReasoningEmitter):
    """`feed(text) -> events`, `finish() -> events`, like `ReasoningParser`;
    `fmt.start`/`fmt.end` are the think channel's markers and
    `fmt.tool_start` the tools channel's open marker.

    States: ``before`` (content; the think open starts reasoning),
    ``thinking``, ``sep`` (after a think close: an optional `<|sep|>`),
    ``after`` (content) and ``tools`` (verbatim)."""

    def __init__(self, fmt, *, force_reasoning: bool | None = None, stream_reasoning: bool = True):
        self.fmt = fmt
        self.stream_reasoning = stream_reasoning
        forced = fmt.thinking_enabled(None) if force_reasoning is None else force_reasoning
        self._state = "thinking" if forced else "before"
        self._think_close = fmt.end.removesuffix(SEP)
        self._reasoning_seen = False
        self._held_back = ""
        self._unstreamed: list[str] = []
        self._channel_markers = marker_set(self._think_close, fmt.tool_start, *WRAPPERS)
        self._opening_markers = marker_set(fmt.start, self._think_close, fmt.tool_start, *WRAPPERS)

    def feed(self, text: str) -> list[Event]:
        if self._state == "tools":
            return [Content(text)] if text else []
        events: list[Event] = []
        buf = self._held_back + text
        pos = 0
        while self._state != "tools":
            if self._state == "sep":
                if buf.startswith(SEP, pos):
                    pos += len(SEP)
                elif cut_short(buf, pos, SEP):
                    self._held_back = buf[pos:]
                    return events
                self._state = "after"
                continue
            markers = self._markers()
            hit = markers.search(buf, pos)
            if hit is None:
                end = markers.safe_end(buf, pos)
                self._emit(events, buf[pos:end])
                self._held_back = buf[end:]
                return events
            self._emit(events, buf[pos : hit.start])
            self._on_marker(hit.marker, events)
            pos = hit.end
        self._held_back = ""
        if pos < len(buf):
            events.append(Content(buf[pos:]))
        return events

    def finish(self) -> list[Event]:
        events: list[Event] = []
        held, self._held_back = self._held_back, ""
        if self._state == "sep":
            self._state = "after"
        cut_marker = held.startswith(CONTROL_TOKENS) and any(m.startswith(held) for m in self._markers().markers)
        if not cut_marker:
            self._emit(events, held)
        self._flush_reasoning(events)
        return events

    def _markers(self) -> MarkerSet:
        """The think open counts before reasoning and as its echo; later it is text."""
        opening = self._state == "before" or (self._state == "thinking" and not self._reasoning_seen)
        return self._opening_markers if opening else self._channel_markers

    def _on_marker(self, marker: str, events: list[Event]) -> None:
        if marker == self.fmt.start:
            if self._state == "thinking" and self._reasoning_seen:
                self._emit(events, marker)  # not an echo: reasoning text came first
            else:
                self._state = "thinking"
            return
        self._flush_reasoning(events)
        if marker == self._think_close:
            self._state = "sep"
        elif self._state == "thinking":
            self._state = "after"
        if marker == self.fmt.tool_start:
            self._state = "tools"
            events.append(Content(marker))
