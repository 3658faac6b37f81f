"""The backend's event stream in: the payload of every event, a batch of
them per read, so that what one read brings goes out to the client
in one write (docs/benchmarks.md, "Gateway macro-benchmark").

`EventLines` splits the backend's bytes into lines itself, fed each piece
the client reads (transport.py), instead of a text and a line decoder
stacked on the byte stream (two more generators per chunk); payloads stay
bytes for orjson.

An event's payload is its `data:` lines' values joined by a line feed,
handed on at the blank line that ends it, as the HTML standard's
event-stream interpretation says: a JSON value split over two `data:`
lines is one payload. A piece that is one whole one-line event and
nothing else, as every piece of a paced stream, takes a short way.
A line still incomplete is held as a list of pieces, joined once when its
end arrives (linear however many pieces it comes in), and a line longer
than `MAX_LINE_BYTES` fails the stream instead of growing without bound,
and so do the `data:` lines of one event together.
A line the stream ends inside, or an event it ends before the event's
blank line (a body delimited by the connection's close, cut mid-event),
is dropped, as the HTML standard's event-stream parsing discards an event
the stream ends before dispatching
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
"""

from __future__ import annotations

MAX_LINE_BYTES = 8 << 20  # no chunk of a chat or text completion comes near this


class LineTooLong(Exception):
    """The backend sent an event line, or an event's `data:` lines together,
    longer than `MAX_LINE_BYTES`."""


class EventLines:
    """One event stream's events, piece by piece: the payload of each."""

    __slots__ = ("_pending", "_held", "_data", "_data_bytes")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the pieces of a line whose end has not come yet
        self._held = 0
        self._data: list[bytes] = []  # the `data:` values of the event whose blank line has not come yet
        self._data_bytes = 0

    def feed(self, received: bytes) -> list[bytes]:
        """The payloads of the events `received` completes: each event's
        `data:` values, stripped, joined by a line feed."""
        whole_event = received[-1:] == b"\n" and received.find(b"\n") == len(received) - 2 and b"\r" not in received
        if whole_event and received[:5] == b"data:" and not self._pending and not self._data:
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
        if received[-1:] == b"\n":
            self._pending, self._held = [], 0
        else:
            # the last line is unfinished, or ends in a CR that a LF may
            # follow in the next piece (one line end, not two)
            last = lines.pop() + b"\r" if received[-1:] == b"\r" else lines.pop()
            self._pending, self._held = [last], len(last)
        if len(text) > MAX_LINE_BYTES and any(len(line) > MAX_LINE_BYTES for line in lines):
            raise LineTooLong
        if not self._data and not len(lines) % 2 and not any(lines[1::2]):
            # a burst of one-line events (`data: …`, a blank line, again), as a busy stream sends them
            payloads = [line[5:].strip() for line in lines[::2] if line[:5] == b"data:"]
            if len(payloads) * 2 == len(lines):
                return payloads
        return self._events(lines)

    def _events(self, lines: list[bytes]) -> list[bytes]:
        """The events `lines` end (at their blank line), the `data:` values
        of one still open kept for the next piece."""
        payloads = []
        data, size = self._data, self._data_bytes
        for line in lines:
            if not line:
                if data:
                    payloads.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data, size = [], 0
            elif line[:5] == b"data:":
                value = line[5:].strip()
                data.append(value)
                size += len(value) + 1
        if size > MAX_LINE_BYTES:
            raise LineTooLong
        self._data, self._data_bytes = data, size
        return payloads
