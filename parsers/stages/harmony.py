"""The reasoning stage for channel formats: OpenAI's Harmony (gpt-oss) and
its relatives (Beam, Muse Glimmer).

Harmony writes messages, not tags::

    <|channel|>analysis<|message|>Need weather.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>
    <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>

A message's header (from `<|start|>` or `<|channel|>` to `<|message|>`)
decides where its body goes: the `analysis` channel is reasoning; a message
with a recipient (`to=functions.x`, in the channel or the role header) is a
tool call, passed on verbatim, header and `<|call|>` included, for the
tool-call stage; anything else (`final`, `commentary` without recipient) is
content. A marker inside a string of a tool call's JSON arguments is text
of the call. Text outside messages is content, except a bare channel name
between two messages (`<|call|>commentary<|channel|>…`, a filler gpt-oss
writes); stray `<|end|>`, `<|return|>` and `<|start|>assistant` are dropped. The header is short and read whole;
bodies stream.

A `ChannelSyntax` says the same as data for each relative: which markers
open a header, which end a body, which headers are tool calls and which
reasoning. Relatives whose prompt ends at `<|start|>assistant` also open
a header with a bare recipient (` to=self<|message|>`) at the start of the
output and after each `<|start|>assistant` (their `message_start`, dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parsers.core.events import Content, Event, Reasoning
from parsers.core.json_scan import JsonValueScanner
from parsers.core.markers import marker_set

START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
_MAX_HEADER_CHARS = 1024
_MAX_FILLER_CHARS = 16


@dataclass(frozen=True)
class ChannelSyntax:
    """How one channel format frames its messages.

    `header_starts` open a header anywhere; `terminators` end a body.
    A header matching `tool_header` (searched) is a tool call, else one
    matching `reasoning_header` is reasoning, else content. `fillers` are
    bare channel names dropped between messages. `message_start` is a
    dropped marker after which `recipient_start` (and at the start of the
    output too) opens a header; `implied_start` is what the prompt wrote
    before such a header, put back in front of it when the message is
    passed on as a tool call. `reasoning_separator` goes between two
    reasoning messages. A header matching `builtin_header` addresses a tool
    the model's host runs itself, not a client function: its body is
    reasoning. Whitespace alone outside messages is dropped."""

    header_starts: tuple[str, ...] = (START, CHANNEL)
    terminators: tuple[str, ...] = ("<|end|>", "<|return|>", "<|call|>")
    tool_header: str = r"\bto=\S"
    reasoning_header: str = r"analysis"
    builtin_header: str | None = None
    fillers: frozenset[str] = frozenset({"analysis", "commentary", "final"})
    message_start: str | None = None
    recipient_start: str | None = None
    implied_start: str = ""
    reasoning_separator: str = ""


# gpt-oss's built-in tools (the browser, python and container tools of its
# system prompt) are not the client's functions: vLLM makes only
# `functions.*` recipients into tool calls and streams the others' bodies as
# reasoning, and so does parsegate. The prompt ends at `<|start|>assistant`,
# so the output may open with the rest of a role header that names the
# recipient: ` to=functions.get_weather<|channel|>commentary json<|message|>…`.
# A message `to=assistant` is the model addressing itself, not a call: its
# channel decides (`<|channel|>commentary to=assistant<|channel|>analysis…`
# is reasoning).
HARMONY = ChannelSyntax(
    tool_header=r"\bto=(?!assistant\b)\S",
    builtin_header=r"\bto=(?:python\b|browser\.|container\.)",
    recipient_start=" to=",
    implied_start=START + "assistant",
)


class HarmonyReasoningParser:
    """`feed(text) -> events`, `finish() -> events`, like `ReasoningParser`."""

    def __init__(self, fmt, *, syntax: ChannelSyntax = HARMONY, **_options):
        """Channel reasoning always streams from the start of the output:
        the `force_reasoning`/`stream_reasoning` options do not apply. A
        format that does not separate reasoning (`fmt.separates`, the
        framing of a tool-call format used with no reasoning parser) sends
        reasoning messages' bodies to the content, without their headers."""
        self.fmt = fmt
        self._syntax = syntax
        self._state = "message_start" if syntax.recipient_start else "between" if syntax.fillers else "outside"
        self._held_back = ""
        self._header: list[str] = []
        self._header_implied = False
        self._kind: type[Content | Reasoning] = Content
        self._tool_call = False
        # A tool call's JSON arguments while its body is read: a marker inside
        # one of their strings is text (as the tool-call stage reads it there).
        self._arguments: JsonValueScanner | None = None
        self._reasoning_seen = False
        self._between: list[str] = []
        starts, terminators = syntax.header_starts, syntax.terminators
        separator = (syntax.message_start,) if syntax.message_start else ()
        self._outside = marker_set(*starts, *terminators, *separator)
        self._in_header = marker_set(MESSAGE, *starts)
        self._in_body = marker_set(*terminators, *starts, *separator)
        self._tool_header = re.compile(syntax.tool_header)
        self._reasoning_header = re.compile(syntax.reasoning_header)
        self._builtin_header = re.compile(syntax.builtin_header) if syntax.builtin_header else None

    def feed(self, text: str) -> list[Event]:
        events: list[Event] = []
        buf = self._held_back + text
        pos = 0
        while True:
            if self._state == "message_start":
                new_pos = self._step_message_start(buf, pos)
                if new_pos is None:
                    return events
                pos = new_pos
            markers = (
                self._in_header
                if self._state == "header"
                else self._in_body
                if self._state == "body"
                else self._outside
            )
            hit = markers.search(buf, pos)
            end = hit.start if hit else markers.safe_end(buf, pos)
            self._take(buf[pos:end], events)
            if hit is None:
                self._held_back = buf[end:]
                return events
            if self._arguments is not None and self._arguments.in_string:
                self._take(hit.marker, events)  # text of a string in a call's JSON arguments
            else:
                self._on_marker(hit.marker, events)
            pos = hit.end

    def finish(self) -> list[Event]:
        events: list[Event] = []
        self._take(self._held_back, events)
        self._held_back = ""
        self._flush_between(events)
        if self._state == "header":
            events.append(Content("".join(self._header)))
        return events

    def _step_message_start(self, buf: str, pos: int) -> int | None:
        """Where a message may begin with a bare recipient: open its header,
        or wait while the text may still become one, or read on as text."""
        opener = self._syntax.recipient_start
        assert opener is not None, "a syntax with message_start has a recipient_start"
        if buf.startswith(opener, pos):
            self._header = [opener]
            self._header_implied = True
            self._state = "header"
            return pos + len(opener)
        if len(buf) - pos < len(opener) and opener.startswith(buf[pos:]):
            self._held_back = buf[pos:]
            return None
        self._state = "between" if self._syntax.fillers else "outside"
        return pos

    def _take(self, text: str, events: list[Event]) -> None:
        if not text:
            return
        if self._state == "between":
            self._between.append(text)
            if sum(map(len, self._between)) > _MAX_FILLER_CHARS:
                self._flush_between(events)
        elif self._state == "header":
            self._header.append(text)
            if sum(map(len, self._header)) > _MAX_HEADER_CHARS:
                events.append(Content("".join(self._header)))
                self._header.clear()
                self._state = "outside"
        else:
            if self._arguments is not None:
                self._arguments.scan(text, 0)
            events.append(self._kind(text))

    def _flush_between(self, events: list[Event]) -> None:
        """Text between two messages: content, unless it is a bare channel name."""
        text = "".join(self._between)
        self._between.clear()
        if self._state == "between":
            self._state = "outside"
        if text.strip() and text.strip().lower() not in self._syntax.fillers:
            events.append(Content(text))

    def _on_marker(self, marker: str, events: list[Event]) -> None:
        self._arguments = None  # every marker read here leaves a body
        if self._state == "between":
            self._flush_between(events)
        if marker == self._syntax.message_start:
            self._kind = Content
            self._state = "message_start"
        elif marker in self._syntax.header_starts and self._state != "header":
            self._header = [marker]
            self._header_implied = False
            self._state = "header"
        elif marker in self._syntax.header_starts:
            self._header.append(marker)
        elif marker == MESSAGE:
            self._open_body(events)
        elif marker in self._syntax.terminators:
            if self._kind is Content and self._tool_call:
                events.append(Content(marker))
            self._kind = Content
            self._state = "between" if self._syntax.fillers else "outside"

    def _open_body(self, events: list[Event]) -> None:
        header = "".join(self._header)
        self._header.clear()
        self._state = "body"
        builtin = self._builtin_header is not None and self._builtin_header.search(header) is not None
        self._tool_call = not builtin and self._tool_header.search(header) is not None
        if self._tool_call:
            self._kind = Content
            self._arguments = JsonValueScanner()
            implied = self._syntax.implied_start if self._header_implied else ""
            events.append(Content(implied + header + MESSAGE))
        elif builtin or self._reasoning_header.search(header):
            self._kind = Reasoning if self.fmt.separates else Content
            if self._reasoning_seen and self._syntax.reasoning_separator:
                events.append(self._kind(self._syntax.reasoning_separator))
            self._reasoning_seen = True
        else:
            self._kind = Content
