"""What a call-body grammar shares with the tool-call stage that drives it.

A body grammar reads the text after a call's start marker. It reports the
calls it reads to a `CallSink` (`start(name)`, `args(text)`, `end()`), and
its `status` says whether it is still reading (`RUNNING`), read a whole
body (`DONE`), or found the text is not a body (`FAILED`).
`StateSteps` is the `step` of a grammar written as named states.
`CallOutcomes` counts what the stage made of its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import orjson

RUNNING, DONE, FAILED = "running", "done", "failed"

# Keys and names longer than this are not a call: a grammar gives up early
# rather than re-matching an ever-growing unterminated token.
MAX_TOKEN_CHARS = 1024


class CallSink(Protocol):
    def start(self, name: str) -> None: ...
    def args(self, text: str) -> None: ...
    def end(self) -> None: ...


class CallBody(Protocol):
    """A body grammar as its driver sees it: `step(buf, pos)` consumes what
    it can decide of `buf[pos:]` and returns where it stopped; `finish()`
    says the text ended inside the body."""

    status: str

    def step(self, buf: str, pos: int) -> int: ...
    def finish(self) -> None: ...


class StateSteps:
    """`step` for a body grammar written as a state machine: `_state` names
    the method that reads on from `pos`, `_step_<state>(buf, pos)`, which
    returns where it stopped, or None while it needs more text. The states
    run until the body is done or failed, the text is all read, or a state
    waits. (The dispatch is one attribute lookup per state run, as cheap as
    writing the loop in each grammar.)"""

    status: str
    _state: str

    def step(self, buf: str, pos: int) -> int:
        while self.status == RUNNING and pos < len(buf):
            new_pos = getattr(self, "_step_" + self._state)(buf, pos)
            if new_pos is None:
                return pos
            pos = new_pos
        return pos


class HoldingCallBody(CallBody, Protocol):
    """A body that holds a typed value's text until the value ends, and
    says how much it holds (its driver caps what it buffers)."""

    held_chars: int


@dataclass
class CallOutcomes:
    """What one tool-call stage made of its text, counted per call:
    `calls` parsed, `fallbacks` (text that began with a call marker but
    held no call, returned as content), and `invalid_arguments` (calls whose
    arguments were not valid JSON when the call ended)."""

    calls: int = 0
    fallbacks: int = 0
    invalid_arguments: int = 0

    def count_call(self, arguments: str) -> None:
        """One call ended with these arguments."""
        self.calls += 1
        try:
            orjson.loads(arguments)
        except orjson.JSONDecodeError:
            self.invalid_arguments += 1
