"""Body grammar: a JSON object keyed by the function name, `{"NAME": ARGS}`.

    {"get_weather": {"city": "Paris"}}                         (Apertus)

Read like `JsonCallObject`: the call is announced as soon as its first key
is read, and the value of that key streams as the arguments, verbatim. Keys
after the first are read and ignored. Wrap it in `JsonCalls(sink,
item=KeyedCallObject)` for an array of such objects.
"""

from __future__ import annotations

from parsers.core.call_body import RUNNING, CallSink
from parsers.grammars.json_call import JsonCallObject


class KeyedCallObject(JsonCallObject):
    def __init__(self, sink: CallSink):
        super().__init__(sink, name_keys=(), args_keys=())

    def _read_key(self, buf: str, pos: int) -> int | None:
        end = super()._read_key(buf, pos)
        if end is None or self.status != RUNNING:
            return end
        if self.started:
            self._args_keys = ()
        else:
            self.started = True
            self._sink.start(self._key)
            self._args_keys = (self._key,)
        return end
