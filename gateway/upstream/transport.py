"""The HTTP client every upstream call goes through: one pooled aiohttp
`ClientSession` per backend, whose C HTTP parser costs a tenth to a third
of httpx's CPU per streamed chunk (docs/benchmarks.md, "Upstream HTTP
client").

`Transport.send` returns an `UpstreamResponse` as soon as the status line
and headers are in (within the backend's `first_byte_timeout`), its body
still to read, and turns the client's failures into `TransportFailure`:
whether a connection was ever made (then a request is safe to try again)
and whether it timed out. Every body is read by one reader, the pushed
body (body_push.py): whole (`read`, up to the backend's
`max_answer_bytes`; an error body up to a limit; a body that came whole
with its headers is taken from aiohttp's reader at once), or as
the `data:` payloads of an event stream (sse_reader.py) handed to their
reader as they arrive (`push_payloads`), each piece due within
`idle_timeout` of the last. There the failures come out as the
client's errors (errors.py). Retries over the backend's URLs are
backend.py's. A demo backend (demo.py) answers in-process instead,
through the same response type.
"""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from gateway.ops.backend_config import MAX_ANSWER_BYTES
from gateway.ops.overhead import BackendWait
from gateway.upstream.body_push import BodyPush, IdleExpired
from gateway.upstream.demo import demo_answer
from gateway.upstream.sse_reader import EventLines, LineTooLong

MAX_CONNECTIONS = 4096  # open connections to one backend, in use or idle
# Backends are asked for bodies as they are (aiohttp asks for gzip by
# default): a compressor holds an event stream's events back until its
# buffer fills, and beside its model server a gateway gains nothing by it.
# A body that comes compressed anyway is still decoded.
UNCOMPRESSED = {"Accept-Encoding": "identity"}


class ClientErrors(Protocol):
    """How a read's failures reach the client (errors.py's `UpstreamErrors`
    for one model): the transport knows the failure, the caller its words."""

    def transport_error(self, failure: TransportFailure) -> Exception: ...

    def line_too_long(self) -> Exception: ...

    def answer_too_large(self, limit: int) -> Exception: ...


class TransportFailure(Exception):
    """A request that got no complete answer: no connection (`connect`: safe
    to try again), a timeout (`timed_out`), or a connection that broke.
    `words` says what happened for the client (no URL, none of the client
    library's text); the exception's own text is the detail, for the log."""

    def __init__(self, error: Exception, *, connect: bool, timed_out: bool, words: str) -> None:
        super().__init__(str(error) or type(error).__name__)
        self.connect = connect
        self.timed_out = timed_out
        self.words = words


@contextmanager
def failures() -> Iterator[None]:
    """aiohttp's errors as `TransportFailure`."""
    try:
        yield
    except aiohttp.ClientError as error:
        raise _as_failure(error) from None


def _as_failure(error: aiohttp.ClientError) -> TransportFailure:
    """One of aiohttp's errors as a `TransportFailure`."""
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return TransportFailure(error, connect=True, timed_out=True, words="timed out opening a connection")
    if isinstance(error, aiohttp.ClientConnectorError):
        return TransportFailure(error, connect=True, timed_out=False, words=_unconnected(error))
    if isinstance(error, aiohttp.ClientPayloadError):  # its text is aiohttp's own (`<ContentLengthError: 400, …>`)
        words = "connection failed: the connection closed before the answer's end"
        return TransportFailure(error, connect=False, timed_out=False, words=words)
    timed_out = isinstance(error, asyncio.TimeoutError)
    return TransportFailure(error, connect=False, timed_out=timed_out, words=_broken(error))


def _unconnected(error: aiohttp.ClientConnectorError) -> str:
    """Why no connection was made, in words."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return "failed TLS: its certificate was not accepted"
    if isinstance(error, aiohttp.ClientSSLError):
        return "failed TLS: the handshake did not complete"
    if isinstance(error.os_error, socket.gaierror):
        return "is unreachable: its host name did not resolve"
    if isinstance(error.os_error, ConnectionRefusedError):
        return "is unreachable: it refused the connection"
    return "is unreachable: no connection could be opened"


def _broken(error: aiohttp.ClientError) -> str:
    """What went wrong on an open connection, in words."""
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "connection failed: it closed the connection"
    if isinstance(error, aiohttp.ClientSSLError):
        return "failed TLS"
    if isinstance(error, aiohttp.ClientResponseError):  # aiohttp's text quotes the bytes it could not parse
        return "connection failed: it answered with something that is not HTTP"
    return "connection failed: the connection broke"


class AnswerTooLarge(Exception):
    """A whole body longer, decoded, than the backend's `max_answer_bytes`."""


def _timed_out(what: str, seconds: float) -> TransportFailure:
    said = f"{what} for {seconds:g} s"
    return TransportFailure(TimeoutError(said), connect=False, timed_out=True, words=f"timed out: {said}")


@asynccontextmanager
async def within_deadline(seconds: float, what: str) -> AsyncIterator[None]:
    """A block that takes longer than `seconds` is a timed-out `TransportFailure`."""
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            yield
    except TimeoutError:
        if timer.expired():
            raise _timed_out(what, seconds) from None
        raise


_Proxy = tuple[URL | None, dict[str, str] | None]  # a proxy and its headers, as aiohttp takes them


def environment_proxy(url: str) -> _Proxy:
    """The proxy the environment names for `url` (`HTTP_PROXY` for http,
    `HTTPS_PROXY` for https, unless `NO_PROXY` exempts its host, as
    urllib.request reads them), and its credentials as the
    `Proxy-Authorization` header (RFC 9110, section 11.7.1): aiohttp sends
    `proxy_headers` on the CONNECT of an https:// request only."""
    parts = urlsplit(url)
    named = urllib.request.getproxies().get(parts.scheme)
    if not named or urllib.request.proxy_bypass(parts.hostname or ""):
        return None, None
    proxy = URL(named)
    credentials = aiohttp.BasicAuth.from_url(proxy)
    return proxy.with_user(None), {"Proxy-Authorization": credentials.encode()} if credentials else None


class UpstreamResponse:
    """A backend's status, reason and headers, and its body (decoded: no
    gzip left) still to read, once, by a `BodyPush` (body_push.py):
    aiohttp's reader of it (`content`), which the push takes over, or
    `pieces` (the demo backend's body, or `_Pieces` of aiohttp's)."""

    __slots__ = ("status", "reason", "headers", "pieces", "content", "_close")

    def __init__(
        self,
        status: int,
        reason: str,
        headers: Mapping[str, str],
        pieces: AsyncIterator[bytes],
        close: Callable[[], None],
        content: aiohttp.StreamReader | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers  # case-insensitive
        self.pieces = pieces
        self.content = content
        self._close = close

    def close(self) -> None:
        """Close the response; a body read to its end gives its connection
        back to the pool, one still streaming closes it, so the backend
        stops generating (again is harmless)."""
        self._close()


class _Pieces:
    """A body's pieces as aiohttp's public `readany` gives them (the pushed
    body's task reads them, body_push.py), except that what arrived before
    the connection broke comes before the error: `readany` raises a failure
    first and drops what it had buffered, where the gateway must still relay
    what the backend did send (all of it, when the break came after its
    `[DONE]`). Only that salvage takes aiohttp's internals (`_read_nowait`,
    which fast_paths.py checks for, and CI with it); an aiohttp without it
    loses those bytes, as its own public reads do."""

    __slots__ = ("_content",)

    def __init__(self, content: aiohttp.StreamReader) -> None:
        self._content = content

    def __aiter__(self) -> _Pieces:
        return self

    async def __anext__(self) -> bytes:
        try:
            piece = await self._content.readany()
        except aiohttp.ClientError:
            piece = _buffered(self._content)
            if not piece:
                raise
        if not piece:
            raise StopAsyncIteration
        return piece


def _buffered(content: aiohttp.StreamReader) -> bytes:
    """What aiohttp's reader still holds once its connection broke, if it says."""
    read = getattr(content, "_read_nowait", None)
    try:
        piece = read(-1) if callable(read) else b""
    except Exception:  # an aiohttp whose internals changed: the bytes are lost, the failure stays
        return b""
    return piece if isinstance(piece, bytes) else b""


def _from_aiohttp(response: aiohttp.ClientResponse) -> UpstreamResponse:
    content = response.content

    def close() -> None:
        if content.at_eof():
            response.release()
        else:
            response.close()

    return UpstreamResponse(response.status, response.reason or "", response.headers, _Pieces(content), close, content)


class Transport:
    """One backend's pooled client (`demo`: the in-process demo backend).
    The session opens on first use, inside the event loop; `trace_configs`
    (tracing.py) must be added before that."""

    def __init__(
        self,
        connect_seconds: float,
        pool_seconds: float,
        first_byte_seconds: float,
        idle_seconds: float,
        *,
        demo: bool,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self.demo = demo
        self.first_byte_seconds = first_byte_seconds
        self.idle_seconds = idle_seconds
        self.max_answer_bytes = max_answer_bytes
        self.trace_configs: list[aiohttp.TraceConfig] = []
        self.timeout = aiohttp.ClientTimeout(total=None, connect=pool_seconds, sock_connect=connect_seconds)
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[tuple[str, str], _Proxy] = {}  # per origin
        self.is_closed = False

    def _opened(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, limit_per_host=0),
                timeout=self.timeout,
                cookie_jar=aiohttp.DummyCookieJar(),  # no cookie of one client's request reaches another's
                headers=UNCOMPRESSED,
                trace_configs=self.trace_configs or None,
            )
        return self._session

    async def send(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]) -> UpstreamResponse:
        """`method` `url` with `body`; the response once its headers are in,
        due within `first_byte_seconds`. Redirects are not followed."""
        if self.is_closed:
            raise RuntimeError("the backend's client is closed")
        if self.demo:
            status, demo_headers, pieces = await demo_answer(method, url, body)
            return UpstreamResponse(status, "", CIMultiDict(demo_headers), pieces, lambda: None)
        proxy, proxy_headers = self._proxy(url)
        if proxy_headers and url.startswith("http:"):  # a forward proxy reads them on the request itself
            headers = {**headers, **proxy_headers}
        # within_deadline and failures, written out: two context managers
        # of generators cost more than the rest of this method, per request
        timer = asyncio.timeout(self.first_byte_seconds)
        try:
            async with timer:
                try:
                    response = await self._opened().request(
                        method,
                        url,
                        data=body,
                        headers=headers,
                        allow_redirects=False,
                        proxy=proxy,
                        proxy_headers=proxy_headers,
                    )
                except aiohttp.ClientError as error:
                    raise _as_failure(error) from None
        except TimeoutError:
            if timer.expired():
                raise _timed_out("sent no response", self.first_byte_seconds) from None
            raise
        return _from_aiohttp(response)

    def _proxy(self, url: str) -> _Proxy:
        """The environment's proxy for `url`, read once per origin: aiohttp's
        own `trust_env` reads it per request, in a worker thread (and
        ~/.netrc in another), two thread hops per request."""
        parts = urlsplit(url)
        origin = (parts.scheme, parts.netloc)
        found = self._proxies.get(origin)
        if found is None:
            found = self._proxies[origin] = environment_proxy(url)
        return found

    async def read(self, response: UpstreamResponse, errors: ClientErrors, limit: int | None = None) -> bytes:
        """A response's whole (decoded) body, which may be at most
        `max_answer_bytes` long (past it, reading stops and the read fails
        with `errors.answer_too_large`), or with `limit` its first `limit`
        bytes (the rest is never read); each piece due within
        `idle_seconds` of the last. Failures as `_read_failures` says."""
        content = response.content
        if content is not None and content.is_eof() and content.exception() is None:
            # The whole body came with the headers (a non-streamed answer, as
            # a model server writes it): taken as it is, with no push to set up.
            body = content.read_nowait()
            if limit is not None:
                return body[:limit]
            if len(body) > self.max_answer_bytes:
                raise errors.answer_too_large(self.max_answer_bytes)
            return body
        pieces: list[bytes] = []
        size = 0
        bound = self.max_answer_bytes

        def delivered(piece: bytes) -> None:
            nonlocal size
            size += len(piece)
            if limit is None and size > bound:
                raise AnswerTooLarge  # the push ends with it, and reads no more
            pieces.append(piece)
            if limit is not None and size >= limit:
                push.stop()

        push = BodyPush(delivered, self.idle_seconds, drain_seconds=0)
        with self._read_failures(errors):
            await push.run(response.content, response.pieces)
        body = b"".join(pieces)
        return body if limit is None else body[:limit]

    async def push_payloads(
        self,
        response: UpstreamResponse,
        errors: ClientErrors,
        deliver: Callable[[list[bytes]], asyncio.Future[None] | None],
        drain_seconds: float,
        wait: BackendWait | None = None,
    ) -> None:
        """The `data:` payloads of a streamed response handed to `deliver` as
        they arrive, a list per piece of the body (body_push.py: `deliver`
        returns the future of a write the client has not taken yet, and
        reading waits for it). The stream ends at its `[DONE]` payload, the
        last delivered; the rest of the body is read for at most
        `drain_seconds` so that the connection goes back to the pool; the
        time `deliver` takes is taken off the request's `wait` for its
        backend. Failures as `_read_failures` says."""
        lines = EventLines()

        def delivered(piece: bytes) -> asyncio.Future[None] | None:
            payloads = lines.feed(piece)
            if not payloads:
                return None
            if b"[DONE]" in payloads:
                push.stop()
            return deliver(payloads)

        push = BodyPush(delivered, self.idle_seconds, drain_seconds, wait)
        with self._read_failures(errors):
            await push.run(response.content, response.pieces)

    @contextmanager
    def _read_failures(self, errors: ClientErrors) -> Iterator[None]:
        """A streamed body's failures as the client's errors: a backend that
        stops sending for `idle_seconds` is a 504, a failed connection a
        502, an endless line or a whole body over `max_answer_bytes` a 502."""
        try:
            with failures():
                yield
        except IdleExpired:
            raise errors.transport_error(_timed_out("stopped sending", self.idle_seconds)) from None
        except TransportFailure as failure:
            raise errors.transport_error(failure) from None
        except LineTooLong:
            raise errors.line_too_long() from None
        except AnswerTooLarge:
            raise errors.answer_too_large(self.max_answer_bytes) from None

    async def aclose(self) -> None:
        self.is_closed = True
        if self._session is not None:
            await self._session.close()
