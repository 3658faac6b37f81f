"""The backend's event stream in: the payload of every `data:` line, a
batch of them per read, so that what one read brings goes out to the client
in one write (docs/benchmarks.md, "Gateway macro-benchmark").

`data_payloads` splits the backend's bytes into lines itself, one generator
over the client's byte stream (transport.py), instead of a text and a line
decoder stacked on it (two more generators per chunk); payloads stay bytes
for orjson.
A line still incomplete is held as a list of pieces, joined once when its
end arrives (linear however many pieces it comes in), and a line longer
than `MAX_LINE_BYTES` fails the stream instead of growing without bound.
A line the stream ends inside (a body delimited by the connection's close,
cut mid-event) is dropped, as the HTML standard's event-stream parsing
discards an event the stream ends before dispatching
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # transport.py reads with this module
    from gateway.backend.transport import UpstreamResponse

MAX_LINE_BYTES = 8 << 20  # no chunk of a chat or text completion comes near this


class LineTooLong(Exception):
    """The backend sent an event line longer than `MAX_LINE_BYTES`."""


def _payload(line: bytes) -> bytes | None:
    if len(line) > MAX_LINE_BYTES:
        raise LineTooLong
    return line[5:].strip() if line.startswith(b"data:") else None


async def data_payloads(response: UpstreamResponse) -> AsyncIterator[list[bytes]]:
    """The payloads of the whole `data:` lines of an event stream, stripped,
    as one list for each read that completes any."""
    pending: list[bytes] = []
    held = 0
    async for received in response.aiter_bytes():
        if b"\n" not in received and b"\r" not in received:
            pending.append(received)
            held += len(received)
            if held > MAX_LINE_BYTES:
                raise LineTooLong
            continue
        lines = (b"".join(pending) + received if pending else received).splitlines()
        pending, held = [], 0
        if received[-1:] not in (b"\n", b"\r"):
            pending.append(lines.pop())
            held = len(pending[0])
        payloads = [payload for payload in map(_payload, lines) if payload is not None]
        if payloads:
            yield payloads
