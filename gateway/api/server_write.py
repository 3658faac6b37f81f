"""An event written straight to the client's connection, past the ASGI
server's `send`: a fast path of `EventStream.write` (sse.py), taken only
where the fast paths run (upstream/fast_paths.py) and the server is
uvicorn's httptools one with the fields below.

uvicorn's `send` for one body message is a message dict, a coroutine
stepped to its end, and a dozen checks, around one `transport.write` of
the HTTP/1.1 chunk (`{size:x}\\r\\n{data}\\r\\n`). Written here instead, the
same chunk costs 5 % fewer instructions per paced chunk of a streamed
request (bench/README.md, "Performance IV: the event written to the
connection"). Those fields are uvicorn's internals
(uvicorn/protocols/http/httptools_impl.py, `RequestResponseCycle`), so
`server_cycle` looks for all of them once per stream, after the response's
start, and answers None where one is missing: the stream then sends as
before. An event still goes through `send` while uvicorn would do more
than write it: the client's flow control has paused writing (`send` waits
for it to drain, and the stream holds its writes), the connection is gone
(`send` drops it), or the response is complete.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Send

_CYCLE_FIELDS = ("flow", "disconnected", "response_complete", "transport")


def server_cycle(send: Send) -> Any | None:
    """uvicorn's request-response cycle behind the server's own `send`, once
    the response has started, when an event may be written to its
    connection directly (module docstring); None otherwise."""
    cycle: Any = getattr(send, "__self__", None)
    if getattr(cycle, "chunked_encoding", None) is not True:  # a length-delimited body, HEAD, another server
        return None
    if not all(hasattr(cycle, name) for name in _CYCLE_FIELDS):
        return None
    if not hasattr(cycle.flow, "write_paused") or not callable(getattr(cycle.transport, "write", None)):
        return None
    return cycle


def writes_now(cycle: Any) -> bool:
    """Whether `send` would do nothing but write this event now."""
    return not (cycle.flow.write_paused or cycle.disconnected or cycle.response_complete)


def http_chunk(event: bytes) -> bytes:
    """`event` framed as one chunk of a chunked HTTP/1.1 body (RFC 9112, 7.1)."""
    return b"%x\r\n%b\r\n" % (len(event), event)
