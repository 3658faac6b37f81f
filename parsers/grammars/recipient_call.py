"""Body grammar: a Functionary v3.2 message, `RECIPIENT\\n` then its text.

The template writes `>>>` before the assistant's first message, so the
output opens with a recipient; every later message starts with `>>>`::

    get_weather\\n{"city": "Paris"}        a call: JSON arguments right after the newline
    python\\nprint("hi")                   the code tool: the rest of the output is its code,
                                         arguments {"code": "print(\\"hi\\")"}
    all\\nHello                            the text recipient: `all\\n` is dropped, the
                                         message is content

A recipient is a word (`[A-Za-z0-9_]+`); anything else, or a recipient
other than the code tool not followed by `{`, is not a message: the text
is content as written.
"""

from __future__ import annotations

from typing import Protocol

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallSink
from parsers.core.json_scan import JsonValueScanner
from parsers.core.json_writer import json_string_body

WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_WORD = always_matching(r"[A-Za-z0-9_]*")


class ReplySink(CallSink, Protocol):
    """A sink that also takes a message that is content, not a call."""

    def reply(self, text: str) -> None: ...


class RecipientCall:
    def __init__(self, sink: ReplySink, *, text_recipient: str = "all", code_recipient: str = "python"):
        self.status = RUNNING
        self._sink = sink
        self._text_recipient = text_recipient
        self._code_recipient = code_recipient
        self._name = ""
        self._state = "name"
        self._args = JsonValueScanner()

    def step(self, buf: str, pos: int) -> int:
        if self._state == "name":
            pos = self._step_name(buf, pos)
        if self._state == "open" and pos < len(buf):
            self._open(buf[pos])
        if self._state == "json":
            end = self._args.scan(buf, pos)
            if end > pos:
                self._sink.args(buf[pos:end])
            if self._args.done:
                self._sink.end()
                self.status = DONE
            return end
        if self._state == "code" and pos < len(buf):
            self._sink.args(json_string_body(buf[pos:]))
            return len(buf)
        return pos

    def finish(self) -> None:
        if self._state == "code":
            self._sink.args('"}')
        self.status = DONE if self._state in ("json", "code") else FAILED

    def _step_name(self, buf: str, pos: int) -> int:
        end = _WORD.match(buf, pos).end()
        self._name += buf[pos:end]
        if len(self._name) > MAX_TOKEN_CHARS:
            self.status = FAILED
        elif end < len(buf):
            if buf[end] != "\n" or not self._name:
                self.status = FAILED
            elif self._name == self._text_recipient:
                self._sink.reply("")
                self.status = DONE
                return end + 1
            else:
                self._state = "open"
                return end + 1
        return end

    def _open(self, char: str) -> None:
        if char == "{":
            self._sink.start(self._name)
            self._state = "json"
        elif self._name == self._code_recipient:
            self._sink.start(self._name)
            self._sink.args('{"code": "')
            self._state = "code"
        else:
            self.status = FAILED
