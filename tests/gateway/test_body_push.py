"""A streamed body pushed to its reader (gateway/upstream/body_push.py),
against a real aiohttp connection on uvloop, the gateway's loop (libuv
reads a busy socket up to 32 times per turn of the loop, which the push
must not take in unbounded): a held write stops the connection from
reading, and once it is taken the rest follows in order."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
import uvloop
from aiohttp import web

from gateway.upstream.body_push import BodyPush

pytestmark = pytest.mark.usefixtures("both_paths")  # the fast paths and their fallbacks (conftest.py)

PIECE = 16384
PIECES = 4096  # 64 MB: more than loopback's socket buffers can hold (Linux: up to 32 MB received, 4 MB sent)


def _piece(number: int) -> bytes:
    return f"{number:015d},".encode() * (PIECE // 16)


async def _held_then_taken() -> tuple[int, int, bool, int, bool]:
    written = 0

    async def stream(request: web.Request) -> web.StreamResponse:
        nonlocal written
        response = web.StreamResponse()
        await response.prepare(request)
        for number in range(PIECES):
            await response.write(_piece(number))
            written += PIECE
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    loop = asyncio.get_running_loop()
    held: asyncio.Future[None] = loop.create_future()
    received: list[bytes] = []

    def deliver(piece: bytes) -> asyncio.Future[None] | None:
        received.append(piece)
        return held if len(received) == 1 else None  # the client's socket is full at the first write

    try:
        async with aiohttp.ClientSession() as session:
            response = await session.get(f"http://127.0.0.1:{port}/")
            push = BodyPush(deliver, idle_seconds=60, drain_seconds=1)
            run = loop.create_task(push.run(response.content, response.content.iter_any()))
            last, steady = -1, 0
            while steady < 5:  # until the server can write no more
                await asyncio.sleep(0.1)
                steady = steady + 1 if written == last else 0
                last = written
            deliveries_while_held, written_while_held = len(received), written
            reading = response.connection is not None and response.connection.transport.is_reading()
            held.set_result(None)  # the client reads on
            await run
    finally:
        await runner.cleanup()
    body = b"".join(received)
    in_order = body == b"".join(_piece(number) for number in range(PIECES))
    return deliveries_while_held, written_while_held, reading, len(body), in_order


def test_a_held_write_stops_the_connection_and_the_rest_follows_in_order():
    deliveries_while_held, written_while_held, reading, size, in_order = uvloop.run(_held_then_taken())
    assert deliveries_while_held == 1  # nothing more was handed on while the write was held
    assert not reading  # the connection stopped reading
    assert written_while_held < PIECES * PIECE // 2  # so the backend was held back
    assert size == PIECES * PIECE and in_order
