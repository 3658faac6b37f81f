"""Every id parsegate makes: a prefix that says what it names, then random
hex digits (OpenAI's `chatcmpl-`, `call_`, `resp_`…, Anthropic's `msg_`,
`toolu_`, and the request ids of the logs).

The digits come from the operating system's random source, as
`secrets.token_hex` reads them (`os.urandom`), but 4 KB at a time: each
read is a system call that lets go of the interpreter, and while another
thread of the gateway's runs (the store's) the loop's thread then waits
to get it back, which made a Responses answer's seven ids cost more than
its JSON (bench/README.md, "Performance IV"). A forked process starts on
bytes of its own, and threads take theirs under a lock, so that no two
ids share digits.
"""

from __future__ import annotations

import os
import threading

UNGUESSABLE = 48  # digits (192 bits) of a stored object's id, which is all it takes to read it without keys
RANDOM_BYTES_READ = 4096  # bytes of the OS's random source read at a time


class _RandomBytes:
    """Bytes of `os.urandom`, read `RANDOM_BYTES_READ` at a time and each given out once."""

    __slots__ = ("_bytes", "_at", "_lock")

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Drop what was read: a forked child must not give out its parent's
        bytes (nor wait on a lock a thread it did not inherit held)."""
        self._lock = threading.Lock()
        self._bytes = b""
        self._at = 0

    def take(self, count: int) -> bytes:
        with self._lock:
            start = self._at
            if start + count > len(self._bytes):
                self._bytes = os.urandom(max(RANDOM_BYTES_READ, count))
                start = 0
            self._at = start + count
            return self._bytes[start : start + count]


_RANDOM = _RandomBytes()
os.register_at_fork(after_in_child=_RANDOM.forget)


def new_id(prefix: str, digits: int = 24) -> str:
    """`prefix` and `digits` random hex digits (an even number)."""
    return prefix + _RANDOM.take(digits // 2).hex()
