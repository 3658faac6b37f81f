"""Body grammar: JSON calls, optionally inside a Markdown code fence that
the format's start marker does not include (Command R+'s `Action:`)::

    Action: ```json
    [{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]
    ```

Blank text, then ```` ```json ```` or ```` ``` ```` if present, then the
inner body reads the calls; the closing fence is the format's `call_end`.
"""

from __future__ import annotations

from collections.abc import Callable

from parsers.core.always_matching import always_matching
from parsers.core.call_body import FAILED, RUNNING, CallBody, CallSink

_WHITESPACE = always_matching(r"\s*")
_FENCES = ("```json", "```")


class FencedJson:
    def __init__(self, sink: CallSink, *, inner: Callable[[CallSink], CallBody]):
        self.status = RUNNING
        self._sink = sink
        self._make_inner = inner
        self._inner: CallBody | None = None

    def step(self, buf: str, pos: int) -> int:
        if self._inner is None:
            pos = _WHITESPACE.match(buf, pos).end()
            rest = buf[pos : pos + len(_FENCES[0])]
            if len(rest) < len(_FENCES[0]) and _FENCES[0].startswith(rest):
                return pos  # the fence, or the start of one: wait for more
            pos += next((len(fence) for fence in _FENCES if rest.startswith(fence)), 0)
            self._inner = self._make_inner(self._sink)
        pos = self._inner.step(buf, pos)
        self.status = self._inner.status
        return pos

    def finish(self) -> None:
        if self._inner is None:
            self.status = FAILED
            return
        self._inner.finish()
        self.status = self._inner.status
