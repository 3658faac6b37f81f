"""Body grammar: llama.cpp's generic JSON reply, read after its `{`::

    {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    {"tool_calls": [{"name": "get_weather", "arguments": {…}, "id": "call_1"}, …]}
    {"response": "Hello!"}

`tool_call`/`tool_calls` hold calls (an `id` beside them is read and
ignored); a `response` string is content, decoded as it streams (any other
response value is content as written). Any other first key is not a reply:
the text is content as written.
"""

from __future__ import annotations

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, RUNNING
from parsers.core.json_scan import JsonValueScanner
from parsers.core.json_string import JsonStringDecoder
from parsers.grammars.json_call import JsonCalls
from parsers.grammars.recipient_call import ReplySink

_WHITESPACE = always_matching(r"\s*")
_KINDS = {'"tool_call"': "calls", '"tool_calls"': "calls", '"response"': "response"}


class GenericReply:
    def __init__(self, sink: ReplySink):
        self.status = RUNNING
        self._sink = sink
        self._state = "key"
        self._kind = ""
        self._calls = JsonCalls(sink)
        self._value = JsonValueScanner()
        self._decoder: JsonStringDecoder | None = None

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING:
            if self._state == "calls":
                pos = self._calls.step(buf, pos)
                if self._calls.status == RUNNING:
                    return pos
                if self._calls.status == FAILED:
                    self.status = FAILED
                    return pos
                self._state = "close"
                continue
            if self._state == "response":
                return self._step_response(buf, pos)
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if self._state == "key":
                key = next((key for key in _KINDS if buf.startswith(key, pos)), None)
                if key is not None:
                    self._kind, self._state = _KINDS[key], "colon"
                    pos += len(key)
                elif any(key.startswith(buf[pos:]) for key in _KINDS):
                    return pos  # a key cut short: wait for more
                else:
                    self.status = FAILED
                    return pos
            elif self._state == "colon":
                if buf[pos] != ":":
                    self.status = FAILED
                    return pos
                self._state, pos = self._kind, pos + 1
                if self._kind == "response":
                    self._sink.reply("")
            elif self._state == "close":
                self.status = DONE
                return pos + 1 if buf[pos] == "}" else pos
        return pos

    def finish(self) -> None:
        if self._state == "calls":
            self._calls.finish()
            self.status = self._calls.status
        elif self._state == "response":
            if self._decoder is not None:
                self._sink.reply(self._decoder.finish())
            self.status = DONE
        else:
            self.status = DONE if self._state == "close" else FAILED

    def _step_response(self, buf: str, pos: int) -> int:
        value = self._value
        if not value.started:
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if buf[pos] == '"':
                self._decoder = JsonStringDecoder()
                pos += 1
                value.scan('"', 0)
        start = pos
        pos = value.scan(buf, pos)
        raw = buf[start:pos]
        decoder = self._decoder
        if decoder is None:
            self._sink.reply(raw)
        elif value.done:
            self._sink.reply(decoder.feed(raw[:-1]) + decoder.finish())
            self._decoder = None
        else:
            self._sink.reply(decoder.feed(raw))
        if value.done:
            self._state = "close"
            self.status = RUNNING
            return self.step(buf, pos)
        return pos
