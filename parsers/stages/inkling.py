"""The reasoning stage for Inkling's typed message blocks (docs/parsers.md
`inkling`).

Inkling writes messages framed by control tokens; the prompt ends with the
first `<|message_model|>`, so the output starts with a block's kind::

    <|content_thinking|>Need the weather.<|end_message|>
    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>
    <|message_model|><|content_text|>Asking now.<|end_message|><|content_model_end_sampling|>

The kind token decides where a block's text goes: `<|content_thinking|>`
is reasoning and `<|content_text|>` content, their framing removed; a tool
invocation (`<|content_invoke_tool_json|>` or `…_text|>`) is passed on
verbatim, header and `<|end_message|>` included, for the tool-call stage.
Text outside blocks is content; other control tokens are dropped, and a
header no invocation follows is content. Reasoning streams, or with
`stream_reasoning=False` comes whole when its block ends.
"""

from __future__ import annotations

from parsers.core.events import Content, Event, Reasoning
from parsers.core.inkling_tokens import (
    CONTROL_TOKENS,
    END_MESSAGE,
    END_SAMPLING,
    ENDS,
    INVOKE_JSON,
    INVOKE_TEXT,
    MESSAGE_MODEL,
    TEXT,
    THINKING,
)
from parsers.core.markers import marker_set

_CONTROL = marker_set(*CONTROL_TOKENS)
_KINDS = {THINKING: "thinking", TEXT: "text", MESSAGE_MODEL: "header", END_MESSAGE: "outside", END_SAMPLING: "outside"}
_MAX_HEADER_CHARS = 256


class InklingReasoningParser:
    """`feed(text) -> events`, `finish() -> events`, like `ReasoningParser`.
    Blocks say what they are, so `force_reasoning` does not apply."""

    def __init__(self, fmt, *, stream_reasoning: bool = True, **_options):
        self.fmt = fmt
        self.stream_reasoning = stream_reasoning
        self._kind = "outside"  # outside | header | thinking | text | tool
        self._held_back = ""
        self._header: list[str] = []
        self._header_chars = 0
        self._unstreamed: list[str] = []

    def feed(self, text: str) -> list[Event]:
        events: list[Event] = []
        buf = self._held_back + text
        pos = 0
        while True:
            hit = _CONTROL.search(buf, pos)
            end = hit.start if hit else _CONTROL.safe_end(buf, pos)
            self._take(buf[pos:end], events)
            if hit is None:
                self._held_back = buf[end:]
                return events
            self._on_token(hit.marker, events)
            pos = hit.end

    def finish(self) -> list[Event]:
        events: list[Event] = []
        self._take(self._held_back, events)
        self._held_back = ""
        self._close_block(events)
        return events

    def _take(self, text: str, events: list[Event]) -> None:
        if not text:
            return
        if self._kind == "thinking":
            if self.stream_reasoning:
                events.append(Reasoning(text))
            else:
                self._unstreamed.append(text)
        elif self._kind == "header":
            self._header.append(text)
            self._header_chars += len(text)
            if self._header_chars > _MAX_HEADER_CHARS:
                self._close_block(events)
                self._kind = "outside"
        else:
            events.append(Content(text))

    def _on_token(self, token: str, events: list[Event]) -> None:
        if self._kind == "tool":
            events.append(Content(token))
            if token in ENDS:
                self._kind = "outside"
        elif token in (INVOKE_JSON, INVOKE_TEXT):
            header = MESSAGE_MODEL + "".join(self._header) if self._kind == "header" else ""
            self._header.clear()
            self._close_block(events)
            events.append(Content(header + token))
            self._kind = "tool"
        elif token in _KINDS:
            self._close_block(events)
            self._kind = _KINDS[token]
        elif self._kind == "header":
            self._close_block(events)
            self._kind = "outside"

    def _close_block(self, events: list[Event]) -> None:
        """The end of a block: held reasoning comes out, and a header that
        named no invocation is content."""
        if self._unstreamed:
            events.append(Reasoning("".join(self._unstreamed)))
            self._unstreamed.clear()
        header = "".join(self._header)
        self._header.clear()
        self._header_chars = 0
        if header:
            events.append(Content(header))
