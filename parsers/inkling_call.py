"""Body grammar: one Inkling tool invocation, read whole.

    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>
    <|message_model|>shell<|content_invoke_tool_text|>ls -l<|end_message|>

The body starts at `<|message_model|>` (then a header, the tool's name,
runs to the next control token) or at `<|content_invoke_tool_` (a call
without header). A JSON payload's `name` and `args` make the call (the
header's name is not used); a text payload is the call
`{"text": PAYLOAD}`, named by the header. When the payload holds another
invocation token, the text after the last one is the payload, and the text
before it is content ("recovered"). A payload that is not strict JSON is
read again allowing NaN and infinities (recovered too); a recovered call
must have a name. The call is reported at `<|end_message|>` (a JSON call also when
the output ends); a header followed by another kind of block, or a payload
that is no call (a text payload holding control tokens included), fails,
so the tool-call stage returns its text as content.
"""

from __future__ import annotations

import json

from parsers.inkling import CONTROL_TOKENS, ENDS, INVOKE_JSON, INVOKE_TEXT
from parsers.json_call import DONE, FAILED, RUNNING
from parsers.markers import marker_set

INVOKE_PREFIX = "<|content_invoke_tool_"
_KIND_RESTS = {INVOKE_JSON.removeprefix(INVOKE_PREFIX): INVOKE_JSON, INVOKE_TEXT.removeprefix(INVOKE_PREFIX): INVOKE_TEXT}
_CONTROL = marker_set(*CONTROL_TOKENS)
_PAYLOAD_ENDS = marker_set(INVOKE_JSON, INVOKE_TEXT, *ENDS)
_MAX_HEADER_CHARS = 256


class InklingCall:
    def __init__(self, sink):
        self.status = RUNNING
        self._sink = sink
        self._state = "start"  # start | header | payload
        self._header: list[str] = []
        self._header_chars = 0
        self._kind = INVOKE_JSON
        self._junk: list[str] = []
        self._payload: list[str] = []

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING and pos < len(buf):
            new_pos = getattr(self, "_step_" + self._state)(buf, pos)
            if new_pos is None:
                return pos
            pos = new_pos
        return pos

    def finish(self) -> None:
        """The output ended inside the call: a complete payload still counts."""
        if self.status != RUNNING:
            return
        if self._state == "payload" and self._kind == INVOKE_JSON:
            self._end()
        else:
            self._fail()

    def _step_start(self, buf: str, pos: int) -> int | None:
        """Right after `<|content_invoke_tool_`: `json|>` or `text|>`; after
        `<|message_model|>`: a header."""
        for rest, kind in _KIND_RESTS.items():
            if buf.startswith(rest, pos):
                self._kind, self._state = kind, "payload"
                return pos + len(rest)
            if rest.startswith(buf[pos : pos + len(rest)]) and len(buf) - pos < len(rest):
                return None
        self._state = "header"
        return pos

    def _step_header(self, buf: str, pos: int) -> int | None:
        hit = _CONTROL.search(buf, pos)
        end = hit.start if hit else _CONTROL.safe_end(buf, pos)
        self._header.append(buf[pos:end])
        self._header_chars += end - pos
        if hit is None:
            if self._header_chars > _MAX_HEADER_CHARS:
                self._fail()
            return end if end > pos else None
        if hit.marker not in (INVOKE_JSON, INVOKE_TEXT):
            self._fail()
            return hit.start
        self._kind, self._state = hit.marker, "payload"
        return hit.end

    def _step_payload(self, buf: str, pos: int) -> int | None:
        hit = _PAYLOAD_ENDS.search(buf, pos)
        end = hit.start if hit else _PAYLOAD_ENDS.safe_end(buf, pos)
        self._payload.append(buf[pos:end])
        if hit is None:
            return end if end > pos else None
        if hit.marker in ENDS:
            self._end()
        else:
            self._junk += self._payload
            self._payload = []
            self._kind = hit.marker
        return hit.end

    def _end(self) -> None:
        payload = "".join(self._payload)
        call = _text_call(payload, "".join(self._header)) if self._kind == INVOKE_TEXT else _json_call(payload, bool(self._junk))
        if call is None:
            self._fail()
            return
        junk = _CONTROL.remove("".join(self._junk))
        if junk.strip():
            self._sink.stray(junk)
        name, arguments = call
        self._sink.start(name)
        self._sink.args(arguments)
        self._sink.end()
        self.status = DONE

    def _fail(self) -> None:
        self.status = FAILED


def _text_call(payload: str, header: str) -> tuple[str, str] | None:
    if _CONTROL.search(payload):
        return None
    return header.strip(), json.dumps({"text": payload}, ensure_ascii=False)


def _json_call(payload: str, recovered: bool) -> tuple[str, str] | None:
    try:
        value = json.loads(payload, parse_constant=_refuse)
    except (ValueError, RecursionError):
        value, recovered = _lenient(payload), True
    name = value.get("name") if isinstance(value, dict) else None
    args = value.get("args") if isinstance(value, dict) else None
    if not isinstance(name, str) or not isinstance(args, dict) or (recovered and not name):
        return None
    return name, json.dumps(args, ensure_ascii=False)


def _lenient(payload: str):
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def _refuse(constant: str):
    raise ValueError(constant)
