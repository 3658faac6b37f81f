"""Server-sent events framed: the one place where the gateway makes an
event's bytes, on the hot path.

Framing (https://html.spec.whatwg.org/multipage/server-sent-events.html):
chat completions send `data: JSON` and end with `data: [DONE]`
(`data_event`, `DONE`); the Responses API and Anthropic Messages name each
event, `event: NAME` then `data: JSON` (`named_event`). Each event ends
with a blank line. Events sent per token are framed from an `Envelope`,
the event's bytes around its one varying value, encoded once per block and
concatenated per delta (`head + orjson.dumps(value) + tail`); an event
whose value sits inside its payload, in one or more places (a chat chunk's
text-only delta), is cut at its `HOLE`s once (`pieces_around`) and joined
by the value per delta (`orjson.dumps(value).join(pieces)`).
"""

from __future__ import annotations

import orjson

DATA = b"data: "
END = b"\n\n"
DONE = b"data: [DONE]\n\n"
PING = b": ping\n\n"
HOLE = "parsegate:hole"  # a payload's varying value, for `pieces_around`


def data_event(payload: dict) -> bytes:
    """An unnamed event (chat completions, their errors)."""
    return DATA + orjson.dumps(payload) + END


def relayed_event(payload: bytes) -> bytes:
    """A backend's event payload, framed again whole."""
    return DATA + payload + END


def _head(name: str | None) -> bytes:
    return DATA if name is None else b"event: " + name.encode() + b"\n" + DATA


def named_event(name: str, payload: dict) -> bytes:
    """An event with its `event:` line (Responses, Messages)."""
    return _head(name) + orjson.dumps(payload) + END


class Envelope:
    """The framing of an event whose payload varies in one value, its last:
    `payload`'s innermost last value (the last key's, nested through its
    last dicts and lists) is `None` and stands for it. An event is
    `head + orjson.dumps(value) + tail`; `after` goes right after the
    value (the Responses API's `,"sequence_number":%d`, filled in with `%`).
    With `sse=False`, the JSON alone: a WebSocket message's text."""

    __slots__ = ("head", "tail")

    def __init__(self, name: str | None, payload: dict, after: bytes = b"", sse: bool = True) -> None:
        encoded = orjson.dumps(payload)
        closers = len(encoded) - len(encoded.rstrip(b"]}"))
        hole = len(encoded) - closers - len(b"null")
        assert encoded[hole : hole + 4] == b"null", "the payload's last value is its hole"
        self.head = (_head(name) if sse else b"") + encoded[:hole]
        self.tail = after + encoded[hole + 4 :] + (END if sse else b"")


def pieces_around(payload: dict) -> list[bytes]:
    """`payload` encoded and cut at each value that is `HOLE` (a payload
    of the gateway's own: names and numbers, no client text):
    `orjson.dumps(value).join(pieces)` is the payload with `value` in each."""
    pieces = orjson.dumps(payload).split(orjson.dumps(HOLE))
    assert len(pieces) > 1, "the payload has a hole"
    return pieces
