"""What the server side of a streamed request costs, layer by layer (issue 23, item 2).

The same request (the chat body of bench/surface_requests.py) and the same
upstream (an async generator of one pre-framed `chat.completion.chunk`
event, waiting for the event loop once per event, as a stream that reads a
backend does) are served by ASGI apps that add one layer at a time:

  raw ASGI             reads the body, orjson, sends each event with `send`
  + StreamingResponse  starlette's, which with uvicorn (ASGI spec 2.3) also
                       runs a task that listens for the disconnect
  + EventStream        gateway/api/sse.py in its place: the SSE headers, its
                       own disconnect watch (a task) and keep-alive (a timer)
  Starlette route      a `Router`, a `Request`, the body read by `read_body`
  FastAPI route        an `APIRoute` (its request handling and response checks)
  + disconnect         gateway/api/disconnect.py: the wait for the response
                       watched for the client leaving
  + dependency         the /v1 router's `Depends(require_api_key)` (no keys set)
  + validation         `read_request`: the pydantic check of the chat body
  + middleware         gateway/ops/observe.py's `ObserveMiddleware` (request
                       id, metrics, the access log line, to /dev/null) and
                       the `ConcurrencyLimit` in front of it, as create_app
                       stacks them

Each app is called in-process with uvicorn's scope, a `receive` that gives
the body and then, as uvicorn's does, waits until the response is sent,
and a `send` that drops the message: no socket, so what is counted is the
server side alone. `--streams` requests run at once on one loop (uvloop
when installed). A request with no event gives the cost per request; one
with `--events` events, less that, gives the cost per event. Figures are
CPU µs of the process (`time.process_time`), best of `--repeats`, the
layers taking turns within each repeat.

    python -m bench.server_side_bench [--quick] [--events 200] [--streams 32] [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging.config
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response
from starlette.responses import StreamingResponse
from starlette.routing import Route, Router

from bench.sse_library_bench import written
from bench.surface_requests import BODIES, REPO
from gateway.api.auth import require_api_key
from gateway.api.chat import ChunkEncoder
from gateway.api.disconnect import unless_client_leaves
from gateway.api.limits import ConcurrencyLimit, read_body
from gateway.api.request import read_request
from gateway.api.sse import EventStream
from gateway.ops.config import load_config
from gateway.ops.logs import logging_config
from gateway.ops.metrics import Metrics
from gateway.ops.observe import ObserveMiddleware

EVENT = ChunkEncoder("fake").choice(0, {"content": "abcd"})
BODY = orjson.dumps(dict(BODIES["chat"], stream=True))
PATH = "/v1/chat/completions"
MAX_BODY = 1 << 20
App = Callable[[dict, Callable, Callable], Any]


def scope() -> dict:
    """What uvicorn's httptools protocol hands the app for one request."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8400),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8400"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
        ],
        "state": {},
    }


class Exchange:
    """One request's `receive` and `send`: the body once, then the wait that
    uvicorn's `receive` does until the response has been sent."""

    def __init__(self) -> None:
        self.sent = asyncio.Event()
        self.body_given = False
        self.events = 0

    async def receive(self) -> dict:
        if not self.body_given:
            self.body_given = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await self.sent.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.body":
            if message.get("body"):
                self.events += 1
            if not message.get("more_body", False):
                self.sent.set()


def upstream(count: int) -> AsyncIterator[bytes]:
    async def events() -> AsyncIterator[bytes]:
        for _ in range(count):
            await asyncio.sleep(0)  # a stream waits for its backend between chunks
            yield EVENT

    return events()


def layers(count: int) -> list[tuple[str, App]]:
    """(name, ASGI app) for each layer, serving `count` events per request."""

    async def raw(scope: dict, receive: Callable, send: Callable) -> None:
        orjson.loads((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        async for event in upstream(count):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def response_app(response: Callable[[AsyncIterator[bytes]], Response]) -> App:
        async def app(scope: dict, receive: Callable, send: Callable) -> None:
            orjson.loads((await receive())["body"])
            await response(upstream(count))(scope, receive, send)

        return app

    async def starlette_handler(request: Request) -> Response:
        orjson.loads(await read_body(request, MAX_BODY))
        return EventStream(written(upstream(count)))

    async def fastapi_handler(request: Request) -> Response:
        orjson.loads(await read_body(request, MAX_BODY))
        return EventStream(written(upstream(count)))

    async def stream_when_ready() -> Response:
        return EventStream(written(upstream(count)))

    async def watched_handler(request: Request) -> Response:
        orjson.loads(await read_body(request, MAX_BODY))
        return await unless_client_leaves(request, stream_when_ready())

    async def checked_handler(request: Request) -> Response:
        read_request(await read_body(request, MAX_BODY))
        return await unless_client_leaves(request, stream_when_ready())

    config = load_config(REPO / "bench" / "gateway.yaml")

    def fastapi_app(handler: Callable, dependency: bool, middleware: bool) -> FastAPI:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
        app.state.config = config
        if middleware:
            app.add_middleware(ConcurrencyLimit, server_config=lambda: config.server)
            app.add_middleware(ObserveMiddleware, metrics=Metrics(), server_config=lambda: config.server)
        router = APIRouter(dependencies=[Depends(require_api_key)] if dependency else [])
        router.add_api_route(PATH, handler, methods=["POST"])
        app.include_router(router)
        return app

    return [
        ("raw ASGI", raw),
        ("+ StreamingResponse", response_app(lambda events: StreamingResponse(events, media_type="text/event-stream"))),
        ("+ EventStream", response_app(lambda events: EventStream(written(events)))),
        ("Starlette route", Router([Route(PATH, starlette_handler, methods=["POST"])])),
        ("FastAPI route", fastapi_app(fastapi_handler, dependency=False, middleware=False)),
        ("+ disconnect", fastapi_app(watched_handler, dependency=False, middleware=False)),
        ("+ dependency", fastapi_app(watched_handler, dependency=True, middleware=False)),
        ("+ validation", fastapi_app(checked_handler, dependency=True, middleware=False)),
        ("+ middleware", fastapi_app(checked_handler, dependency=True, middleware=True)),
    ]


async def serve(app: App, streams: int, requests: int, count: int) -> None:
    """`requests` requests, `streams` at a time, each checked to have sent `count` events."""
    left = requests

    async def one_stream() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            exchange = Exchange()
            await app(scope(), exchange.receive, exchange.send)
            assert exchange.events == count, f"{exchange.events} events sent, {count} expected"

    await asyncio.gather(*(one_stream() for _ in range(streams)))


def cpu_us_per_request(loop: asyncio.AbstractEventLoop, app: App, streams: int, requests: int, count: int) -> float:
    gc.collect()
    started = time.process_time()
    loop.run_until_complete(serve(app, streams, requests, count))
    return (time.process_time() - started) / requests * 1e6


def measure(loop: asyncio.AbstractEventLoop, args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """(layer, µs per request, µs per event): the best of the repeats, the
    layers taking turns in each repeat so that a busy spell of the machine
    does not land on one layer alone; one unmeasured run of each app first
    (imports, caches)."""
    apps = [(name, empty, full) for (name, empty), (_, full) in zip(layers(0), layers(args.events), strict=True)]
    for _, empty, full in apps:
        cpu_us_per_request(loop, empty, args.streams, args.streams, 0)
        cpu_us_per_request(loop, full, args.streams, args.streams, args.events)
    best = {name: (float("inf"), float("inf")) for name, _, _ in apps}
    for repeat in range(args.repeats):
        for name, empty, full in apps:
            per_request = cpu_us_per_request(loop, empty, args.streams, args.requests, 0)
            streamed = cpu_us_per_request(loop, full, args.streams, args.stream_requests, args.events)
            best[name] = (min(best[name][0], per_request), min(best[name][1], streamed))
        print(f"  repeat {repeat + 1} of {args.repeats} done", flush=True)
    return [
        (name, per_request, (streamed - per_request) / args.events) for name, (per_request, streamed) in best.items()
    ]


def report(rows: list[tuple[str, float, float]]) -> None:
    print("| layer | µs per request | added | µs per event | added |")
    print("|---|---|---|---|---|")
    previous = rows[0]
    for name, per_request, per_event in rows:
        print(
            f"| {name} | {per_request:.1f} | {per_request - previous[1]:+.1f} | "
            f"{per_event:.2f} | {per_event - previous[2]:+.2f} |"
        )
        previous = (name, per_request, per_event)
    floor, top = rows[0], rows[-1]
    print(f"whole stack over raw ASGI: {top[1] - floor[1]:+.1f} µs per request, {top[2] - floor[2]:+.2f} µs per event")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200, help="events per streamed request")
    parser.add_argument("--streams", type=int, default=32, help="requests at once on the loop")
    parser.add_argument("--requests", type=int, default=4000, help="requests without events per figure")
    parser.add_argument("--stream-requests", type=int, default=400, help="streamed requests per figure")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="200 and 64 requests, 64 events, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.stream_requests, args.events, args.repeats = 200, 64, 64, 1
    access_log = logging_config("text")
    access_log["handlers"]["default"]["stream"] = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the run
    logging.config.dictConfig(access_log)
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    print(
        f"{args.streams} requests at once, {args.events} events of {len(EVENT)} bytes per stream; "
        f"event loop {type(loop).__module__}",
        flush=True,
    )
    try:
        report(measure(loop, args))
    finally:
        loop.close()


if __name__ == "__main__":
    main()
