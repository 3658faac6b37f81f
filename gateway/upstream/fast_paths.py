"""The fast paths: two uses of aiohttp's and asyncio's internals that save
CPU on every streamed chunk, each beside an ordinary fallback that does
the same with public interfaces only:

- the pushed body (body_push.py) takes the place of aiohttp's
  `StreamReader` for a response's body, so that a piece goes from the
  HTTP parser to its reader in the connection's callback; the fallback
  reads the body in a task, with aiohttp's public `iter_any`;
- `EventStream.write` (api/sse.py) steps the ASGI server's `send`
  coroutine from that callback, as an asyncio task would step it; the
  fallback awaits the `send` in a task. On uvicorn's httptools server it
  writes an event straight to the connection where that `send` would do
  nothing else (api/server_write.py, which looks for uvicorn's fields per
  stream and sends as before where one is missing).

Whether they run is decided once, as the process starts (`ENABLED`): only
where `PARSEGATE_FAST_PATHS` is not `0` and a check of the installed
aiohttp and asyncio finds the exact internals they use (`unavailable`
says what is missing); otherwise the fallbacks run, and `log_choice`
writes one start-up line saying which. So an aiohttp or Python release
that changes those internals costs speed, not correctness. CI runs the
transport's and the event stream's tests on both paths
(tests/gateway/conftest.py, `both_paths`), and
tests/gateway/test_fast_paths.py fails when the installed aiohttp or
Python no longer has what the fast paths need.
"""

from __future__ import annotations

import asyncio
import logging
import os

import aiohttp
from aiohttp.client_proto import ResponseHandler

VARIABLE = "PARSEGATE_FAST_PATHS"
log = logging.getLogger("parsegate.startup")  # with the other start-up lines (ops/startup.py)

# What the pushed body calls on aiohttp's reader (body_push.py).
_READER_METHODS = (
    "feed_data",
    "feed_eof",
    "set_exception",
    "begin_http_chunk_receiving",
    "end_http_chunk_receiving",
    "exception",
    "is_eof",
    "read_nowait",
    "_read_nowait",
)


class _Swapped(aiohttp.StreamReader):
    """A subclass laid out as aiohttp's reader, as body_push's `_PushedReader` is."""

    __slots__ = ()


def _reader_swap_missing() -> str | None:
    """What the pushed body needs of aiohttp and this aiohttp lacks, if anything."""
    if type(aiohttp.StreamReader) is not type:
        return "aiohttp's StreamReader is not a plain Python class"
    missing = [name for name in _READER_METHODS if not callable(getattr(aiohttp.StreamReader, name, None))]
    missing += [
        name for name in ("pause_reading", "resume_reading") if not callable(getattr(ResponseHandler, name, None))
    ]
    if missing:
        return "aiohttp lacks " + ", ".join(missing)
    loop = asyncio.new_event_loop()
    try:
        protocol = ResponseHandler(loop)
        reader = aiohttp.StreamReader(protocol, 2**16, loop=loop)
        if getattr(reader, "_protocol", None) is not protocol:
            return "aiohttp's StreamReader does not keep its connection as _protocol"
        reader.__class__ = _Swapped
        reader.__class__ = aiohttp.StreamReader
    except Exception as error:  # whatever a changed aiohttp raises: the fallback runs
        return f"aiohttp's StreamReader cannot be taken over ({error!r})"
    finally:
        loop.close()
    return None


def _send_stepping_missing() -> str | None:
    """What stepping a coroutine as a task does needs of asyncio and this
    Python lacks, if anything: a coroutine that awaits a future yields that
    very future, marked as blocking (`_asyncio_future_blocking`, which a
    task clears as it takes it), and goes on once it is done."""
    loop = asyncio.new_event_loop()
    try:
        future: asyncio.Future[int] = loop.create_future()

        async def waiting() -> int:
            return await future

        stepped = waiting()
        try:
            yielded = stepped.send(None)
            if yielded is not future or getattr(future, "_asyncio_future_blocking", None) is not True:
                return "a coroutine awaiting an asyncio future does not yield it, marked as blocking"
            future._asyncio_future_blocking = False
            future.set_result(1)
            try:
                stepped.send(None)
            except StopIteration as finished:
                return None if finished.value == 1 else "a stepped coroutine lost its future's result"
            return "a stepped coroutine did not end once its future was done"
        finally:
            stepped.close()
    except Exception as error:  # whatever a changed asyncio raises: the fallback runs
        return f"asyncio's futures cannot be awaited by a stepped coroutine ({error!r})"
    finally:
        loop.close()


def _unavailable() -> str | None:
    return _reader_swap_missing() or _send_stepping_missing()


unavailable = _unavailable()  # why the fast paths cannot run here, or None
TURNED_OFF = os.environ.get(VARIABLE, "1").strip() == "0"
ENABLED = unavailable is None and not TURNED_OFF  # read per stream, never per chunk (tests switch it)


def describe() -> str:
    """Which paths this process runs, and why."""
    if ENABLED:
        return f"fast paths on: aiohttp {aiohttp.__version__}'s reader is taken over and the server's send stepped"
    why = f"{VARIABLE}=0" if TURNED_OFF else unavailable
    return f"fast paths off ({why}): a task reads each backend body and awaits each send"


def log_choice() -> None:
    """The start-up line saying which paths run."""
    log.info("%s", describe())
