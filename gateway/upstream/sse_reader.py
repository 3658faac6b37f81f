"""The backend's event stream in: the payload of every `data:` line, a
batch of them per read, so that what one read brings goes out to the client
in one write (docs/benchmarks.md, "Gateway macro-benchmark").

`EventLines` splits the backend's bytes into lines itself, fed each piece
the client reads (transport.py), instead of a text and a line decoder
stacked on the byte stream (two more generators per chunk); payloads stay
bytes for orjson.
A line still incomplete is held as a list of pieces, joined once when its
end arrives (linear however many pieces it comes in), and a line longer
than `MAX_LINE_BYTES` fails the stream instead of growing without bound.
A line the stream ends inside (a body delimited by the connection's close,
cut mid-event) is dropped, as the HTML standard's event-stream parsing
discards an event the stream ends before dispatching
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
"""

from __future__ import annotations

MAX_LINE_BYTES = 8 << 20  # no chunk of a chat or text completion comes near this


class LineTooLong(Exception):
    """The backend sent an event line longer than `MAX_LINE_BYTES`."""


class EventLines:
    """One event stream's `data:` payloads, piece by piece."""

    __slots__ = ("_pending", "_held")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the pieces of a line whose end has not come yet
        self._held = 0

    def feed(self, received: bytes) -> list[bytes]:
        """The payloads of the `data:` lines `received` completes, stripped."""
        whole_event = received[-1:] == b"\n" and received.find(b"\n") == len(received) - 2 and b"\r" not in received
        if whole_event and received[:5] == b"data:" and not self._pending:
            # one `data:` event and nothing else, as every piece of a paced stream: the short way
            return [received[5:-2].strip()]
        if b"\n" not in received and b"\r" not in received:
            self._pending.append(received)
            self._held += len(received)
            if self._held > MAX_LINE_BYTES:
                raise LineTooLong
            return []
        pending = self._pending
        text = b"".join(pending) + received if pending else received
        lines = text.splitlines()
        if received[-1:] in (b"\n", b"\r"):
            self._pending, self._held = [], 0
        else:
            last = lines.pop()
            self._pending, self._held = [last], len(last)
        if len(text) > MAX_LINE_BYTES and any(len(line) > MAX_LINE_BYTES for line in lines):
            raise LineTooLong
        return [line[5:].strip() for line in lines if line[:5] == b"data:"]
