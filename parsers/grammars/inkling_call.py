"""Body grammar: one Inkling tool invocation, streamed.

    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>
    <|message_model|>shell<|content_invoke_tool_text|>ls -l<|end_message|>

The body starts at `<|message_model|>` (then a header, the tool's name,
runs to the next control token) or at `<|content_invoke_tool_` (a call
without header). A JSON payload is read by `JsonCallObject` (keys `name`
and `args`; the header's name is not used): the call is named as soon as
its `name` is read, and its `args` stream as written. A text payload is
the call `{"text": PAYLOAD}`, named by the header, the text streaming as
a JSON string.

A JSON payload that names no call is skipped to the next invocation token
or end token. After another invocation token the payload is read again
("recovered"): if it names a call (it must, with a non-empty name), the
skipped text is content, control tokens removed. A body that names no
call fails, so the tool-call stage returns its text as content. A call
once named is never retracted: what follows its payload before
`<|end_message|>` (a control token inside a text payload, text after the
JSON) is read as text again, and a call the output cuts off keeps what it
streamed.
"""

from __future__ import annotations

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, StateSteps
from parsers.core.inkling_tokens import CONTROL_TOKENS, ENDS, INVOKE_JSON, INVOKE_TEXT
from parsers.core.json_writer import json_string_body
from parsers.core.markers import cut_short, marker_set
from parsers.grammars.json_call import JsonCallObject

INVOKE_PREFIX = "<|content_invoke_tool_"
_KIND_RESTS = {
    INVOKE_JSON.removeprefix(INVOKE_PREFIX): INVOKE_JSON,
    INVOKE_TEXT.removeprefix(INVOKE_PREFIX): INVOKE_TEXT,
}
_CONTROL = marker_set(*CONTROL_TOKENS)
_PAYLOAD_ENDS = marker_set(INVOKE_JSON, INVOKE_TEXT, *ENDS)
_WHITESPACE = always_matching(r"\s*")
_MAX_HEADER_CHARS = 256


class InklingCall(StateSteps):
    def __init__(self, sink):
        self.status = RUNNING
        self._sink = sink
        self._state = "start"  # start | header | json | after_json | text | skip
        self._header: list[str] = []
        self._header_chars = 0
        self._json: JsonCallObject | None = None
        self._named = False
        self._recovered = False
        self._refused = False
        self._unnamed_payload: list[str] = []
        self._skipped: list[str] = []

    def finish(self) -> None:
        """The output ended inside the call: a named call keeps what it streamed."""
        if self.status != RUNNING:
            return
        if self._state == "text":
            self._end_text()
        elif self._named and self._json is not None and self._json.status == RUNNING:
            self._json.finish()
        self.status = DONE if self._named else FAILED

    # CallSink of the JSON payload's reader.
    def start(self, name: str) -> None:
        if self._recovered and not name:
            self._refused = True
            return
        self._release_skipped()
        self._named = True
        self._sink.start(name)

    def args(self, text: str) -> None:
        if self._named:
            self._sink.args(text)

    def end(self) -> None:
        if self._named:
            self._sink.end()

    def _step_start(self, buf: str, pos: int) -> int | None:
        """Right after `<|content_invoke_tool_`: `json|>` or `text|>`; after
        `<|message_model|>`: a header."""
        for rest, kind in _KIND_RESTS.items():
            if buf.startswith(rest, pos):
                if kind == INVOKE_TEXT:  # a text payload is named by a header only
                    self.status = FAILED
                    return pos + len(rest)
                self._open_payload(kind)
                return pos + len(rest)
            if cut_short(buf, pos, rest):
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
                self.status = FAILED
            return end if end > pos else None
        if hit.marker not in (INVOKE_JSON, INVOKE_TEXT):
            self.status = FAILED
            return hit.start
        if hit.marker == INVOKE_TEXT and not "".join(self._header).strip():
            self.status = FAILED  # a text payload is named by its header only
            return hit.end
        self._open_payload(hit.marker)
        return hit.end

    def _open_payload(self, kind: str) -> None:
        if kind == INVOKE_TEXT:
            self._release_skipped()
            self._named = True
            self._sink.start("".join(self._header).strip())
            self._sink.args('{"text": "')
            self._state = "text"
        else:
            self._json = JsonCallObject(self, name_keys=("name",), args_keys=("args",))
            self._unnamed_payload = []
            self._state = "json"

    def _step_json(self, buf: str, pos: int) -> int | None:
        """The JSON payload, bounded by the next invocation or end token."""
        hit = _PAYLOAD_ENDS.search(buf, pos)
        bound = hit.start if hit else _PAYLOAD_ENDS.safe_end(buf, pos)
        reader = self._json
        assert reader is not None, "the json state has a reader"
        end = reader.step(buf if bound == len(buf) else buf[:bound], pos)
        if not self._named:
            self._unnamed_payload.append(buf[pos:end])
        if self._refused or (reader.status == FAILED and not self._named):
            self._skipped += self._unnamed_payload
            self._state = "skip"
            return end
        if reader.status == FAILED:
            self.status = DONE  # the rest is read as text again
            return end
        if reader.status == DONE:
            self._state = "after_json"
            return end
        if hit is None:
            return end if end > pos else None
        if not self._named:
            self._skipped += self._unnamed_payload
            self._skipped.append(buf[end : hit.start])
            self._state = "skip"
            return hit.start
        reader.finish()  # the end came inside the payload: the call keeps what it streamed
        self._sink.end()
        self.status = DONE
        return hit.end if hit.marker in ENDS else hit.start

    def _step_after_json(self, buf: str, pos: int) -> int | None:
        """After the payload: optional whitespace, then an end token."""
        blank_end = _WHITESPACE.match(buf, pos).end()
        for marker in ENDS:
            if buf.startswith(marker, blank_end):
                self.status = DONE
                return blank_end + len(marker)
        waiting = blank_end == len(buf) or any(cut_short(buf, blank_end, marker) for marker in ENDS)
        if waiting and blank_end - pos <= MAX_TOKEN_CHARS:
            return None
        self.status = DONE  # the call stands; what follows is read as text
        return pos

    def _step_text(self, buf: str, pos: int) -> int | None:
        """A text payload streams up to the next control token."""
        hit = _CONTROL.search(buf, pos)
        end = hit.start if hit else _CONTROL.safe_end(buf, pos)
        if end > pos:
            self._sink.args(json_string_body(buf[pos:end]))
        if hit is None:
            return end if end > pos else None
        self._end_text()
        self.status = DONE
        return hit.end if hit.marker in ENDS else hit.start

    def _end_text(self) -> None:
        self._sink.args('"}')
        self._sink.end()

    def _step_skip(self, buf: str, pos: int) -> int | None:
        """A payload that named no call, up to the next invocation or end token."""
        hit = _PAYLOAD_ENDS.search(buf, pos)
        end = hit.start if hit else _PAYLOAD_ENDS.safe_end(buf, pos)
        self._skipped.append(buf[pos:end])
        if hit is None:
            return end if end > pos else None
        if hit.marker in ENDS:
            self.status = FAILED
        else:
            self._recovered, self._refused = True, False
            self._open_payload(hit.marker)
        return hit.end

    def _release_skipped(self) -> None:
        """Skipped payloads, once a later one names a call, are content."""
        skipped = _CONTROL.remove("".join(self._skipped))
        self._skipped.clear()
        if skipped.strip():
            self._sink.stray(skipped)
