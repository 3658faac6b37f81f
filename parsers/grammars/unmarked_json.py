"""Body grammar: JSON calls a model writes with no marker, amid its text
(Llama 3.x JSON tool calling), bare or in a ```` ```json ```` fence.

    {"name": "get_weather", "parameters": {"city": "Paris"}}
    Checking. {"name": "get_weather", "parameters": {"city": "Paris"}} Done.
    ```json
    {"name": "get_weather", "parameters": {"city": "Paris"}}
    ```

The body starts at a `{` anywhere in the text, or at an opening fence,
which it reads itself. A JSON value found that way is a call only when it
has both a name and an arguments key (`parameters` or `arguments`) and
names a function the request offers; anything else (`{"city": "Paris"}`,
`{"name": "x"}`, a code block) fails before it commits, and the tool-call
stage returns it as content, verbatim. Behind a marker (`<|python_tag|>`)
the value is read as `JsonCalls` reads it. A fence may hold several calls,
separated by `;` or whitespace, up to its closing fence.
"""

from __future__ import annotations

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, RUNNING
from parsers.core.markers import cut_short
from parsers.grammars.json_call import JsonCalls

FENCE_OPEN = "```json"
FENCE_CLOSE = "```"
_WS = always_matching(r"\s*")


class UnmarkedJsonCalls:
    def __init__(self, sink, **keys):
        self.status = RUNNING
        self._keys = keys  # the call object's key names (`JsonCalls`)
        self._sink = sink
        self._accepts = sink.offers if sink.body_unmarked else None
        self._fenced: bool | None = None  # unknown until the first character
        self._calls: JsonCalls | None = None
        self._read_one = False

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING:
            calls = self._calls
            if calls is not None:
                pos = calls.step(buf, pos)
                if calls.status == RUNNING:
                    return pos
                self._calls = None
                if calls.status == FAILED or not self._fenced:
                    self.status = calls.status
                    return pos
                self._read_one = True
            elif self._fenced is None:
                self._fenced = buf.startswith(FENCE_OPEN, pos)
                if self._fenced:
                    pos += len(FENCE_OPEN)
                else:
                    self._calls = JsonCalls(self._sink, accepts=self._accepts, **self._keys)
            else:
                pos = _WS.match(buf, pos).end()
                if pos == len(buf) or cut_short(buf, pos, FENCE_CLOSE):
                    return pos
                pos = self._in_fence(buf, pos)
        return pos

    def _in_fence(self, buf: str, pos: int) -> int:
        """Between calls in a fence: the closing fence, `;`, or a call."""
        if buf.startswith(FENCE_CLOSE, pos):
            self.status = DONE if self._read_one else FAILED
            return pos + len(FENCE_CLOSE)
        if buf[pos] == ";" and self._read_one:
            return pos + 1
        if buf[pos] in "{[":
            self._calls = JsonCalls(self._sink, accepts=self._accepts, **self._keys)
            return pos
        self.status = DONE if self._read_one else FAILED
        return pos

    def finish(self) -> None:
        if self._calls is not None:
            self._calls.finish()
        self.status = DONE
