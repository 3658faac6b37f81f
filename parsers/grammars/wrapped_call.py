"""Body grammar: a JSON call object, bare or wrapped as `{"function": {…}}`.

    {"name": "search", "arguments": {"query": "x"}}
    {"function": {"name": "search", "arguments": {"query": "x"}}}      (K2 Horizon)

The wrapped object is read by a `JsonCallObject` of its own, so it streams
as the bare one does (name first, then the arguments as they arrive);
keys beside `function` are read and ignored. Wrap it in `JsonCalls(sink,
item=WrappedCallObject)` for an array of such objects.
"""

from __future__ import annotations

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, RUNNING, CallSink
from parsers.grammars.json_call import JsonCallObject

_WHITESPACE = always_matching(r"\s*")


class WrappedCallObject(JsonCallObject):
    def __init__(self, sink: CallSink):
        super().__init__(sink)
        self._inner: JsonCallObject | None = None

    def finish(self) -> None:
        if self._inner is not None and self._inner.status == RUNNING:
            self._inner.finish()
            self.status = self._inner.status
            return
        super().finish()

    def _step_value(self, buf: str, pos: int) -> int:
        inner = self._inner
        if inner is None or inner.status != RUNNING:
            value = self._value
            assert value is not None, "the colon made a scanner"
            if self._key != "function" or self.started or value.started:
                return super()._step_value(buf, pos)
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            if buf[pos] != "{":
                return super()._step_value(buf, pos)
            inner = self._inner = JsonCallObject(self._sink)
        pos = inner.step(buf, pos)
        if inner.status == FAILED:
            self.status = FAILED
        elif inner.status == DONE:
            self.started = True
            self._state = "next"
        return pos

    def _close(self) -> None:
        if self._inner is not None and self._inner.status == DONE:
            self.status = DONE
            return
        super()._close()
