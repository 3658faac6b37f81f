"""SSE writer comparison: the gateway's `EventStream` against sse-starlette.

Each writer is an ASGI app called in-process with uvicorn's scope (ASGI
spec 2.3, so starlette also listens for the disconnect), a `receive` that
never returns and a `send` that drops the message: what is counted is
the writer's own CPU per event, with no socket. Every stream sends the
same `chat.completion.chunk` event (`ChunkEncoder.choice`, pre-framed
`data: …\\n\\n` bytes) `--events` times:

- `bare`: the floor, a plain loop that sends each event;
- `EventStream`: gateway/api/sse.py, each event written as the surfaces
  write the backend's (`EventStream.write`);
- `EventSourceResponse`: sse-starlette given the same bytes;
- `EventSourceResponse, dict events`: sse-starlette given `{"data": json}`
  and framing each event itself, as its users write it.

One stream sends all its events without waiting (the writer alone); then
`--streams` streams run at once on one event loop, each waiting for the
loop once per event, as a stream that reads a backend does. Figures are
CPU µs of the process per event (`time.process_time`, best of
`--repeats`), on uvloop when it is installed (uvicorn's choice too).

    python -m bench.sse_library_bench [--quick] [--events 100000] [--streams 32]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import AsyncIterator, Callable

from sse_starlette import EventSourceResponse

from gateway.api.chat import ChunkEncoder
from gateway.api.sse import EventStream, Produce

EVENT = ChunkEncoder("demo").choice(0, {"content": "abcd"})
EVENT_DATA = EVENT.removeprefix(b"data: ").removesuffix(b"\n\n").decode()
SCOPE = {
    "type": "http",
    "asgi": {"version": "3.0", "spec_version": "2.3"},
    "http_version": "1.1",
    "method": "POST",
    "path": "/v1/chat/completions",
    "headers": [],
}

Events = Callable[[int, bool], AsyncIterator]


async def _framed(count: int, wait: bool) -> AsyncIterator[bytes]:
    for _ in range(count):
        if wait:
            await asyncio.sleep(0)
        yield EVENT


async def _dicts(count: int, wait: bool) -> AsyncIterator[dict]:
    for _ in range(count):
        if wait:
            await asyncio.sleep(0)
        yield {"data": EVENT_DATA}


async def _never() -> dict:
    await asyncio.get_running_loop().create_future()
    raise AssertionError("unreachable")


class Sink:
    """The ASGI `send`: counts body bytes, keeps nothing."""

    def __init__(self) -> None:
        self.bodies = 0
        self.bytes = 0

    async def __call__(self, message: dict) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            self.bodies += 1
            self.bytes += len(message["body"])


async def _bare(events: AsyncIterator, sink: Sink) -> None:
    await sink({"type": "http.response.start", "status": 200, "headers": []})
    async for event in events:
        await sink({"type": "http.response.body", "body": event, "more_body": True})
    await sink({"type": "http.response.body", "body": b"", "more_body": False})


def written(events: AsyncIterator[bytes]) -> Produce:
    """A producer that writes each event as a surface writes the backend's
    (`EventStream.write`, waiting only for a write the client holds)."""

    async def produce(out: EventStream) -> None:
        async for event in events:
            held = out.write(event)
            if held is not None:
                await held

    return produce


async def _event_stream(events: AsyncIterator, sink: Sink) -> None:
    await EventStream(written(events))(SCOPE, _never, sink)


async def _event_source(events: AsyncIterator, sink: Sink) -> None:
    await EventSourceResponse(events, sep="\n")(SCOPE, _never, sink)


WRITERS: list[tuple[str, Callable, Events]] = [
    ("bare", _bare, _framed),
    ("EventStream", _event_stream, _framed),
    ("EventSourceResponse", _event_source, _framed),
    ("EventSourceResponse, dict events", _event_source, _dicts),
]


async def _streams(writer: Callable, events: Events, streams: int, count: int, wait: bool) -> list[Sink]:
    sinks = [Sink() for _ in range(streams)]
    await asyncio.gather(*(writer(events(count, wait), sink) for sink in sinks))
    return sinks


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left (sse-starlette's shutdown watcher), then close."""
    left = asyncio.all_tasks(loop)
    for task in left:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    loop.close()


def cpu_us_per_event(
    loop: asyncio.AbstractEventLoop, writer: Callable, events: Events, streams: int, count: int, wait: bool
) -> float:
    """CPU µs of this process per event sent, `streams` streams of `count` events."""
    gc.collect()
    started = time.process_time()
    sinks = loop.run_until_complete(_streams(writer, events, streams, count, wait))
    spent = time.process_time() - started
    for sink in sinks:
        assert sink.bodies == count and sink.bytes == count * len(EVENT), "every event reached the client whole"
    return spent / (streams * count) * 1e6


def measure(loop: asyncio.AbstractEventLoop, streams: int, count: int, wait: bool, repeats: int) -> dict[str, float]:
    """Best of `repeats` for each writer, after one unmeasured run of each
    (the first use of anyio imports its asyncio backend)."""
    for _, writer, events in WRITERS:
        cpu_us_per_event(loop, writer, events, streams, 10, wait)
    return {
        name: min(cpu_us_per_event(loop, writer, events, streams, count, wait) for _ in range(repeats))
        for name, writer, events in WRITERS
    }


def report(title: str, figures: dict[str, float]) -> None:
    print(f"\n{title}")
    print("| writer | µs per event | over `bare` |\n|---|---|---|")
    floor = figures["bare"]
    for name, us in figures.items():
        print(f"| {name} | {us:.2f} | {us - floor:.2f} |")
    ours, theirs = figures["EventStream"], figures["EventSourceResponse"]
    print(f"ratio EventSourceResponse / EventStream: {theirs / ours:.2f}x per event ({theirs - ours:+.2f} µs)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per single stream")
    parser.add_argument("--streams", type=int, default=32, help="concurrent streams in the second run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 events, 4 streams, one repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.streams, args.repeats = 2_000, 4, 1
    per_stream = max(args.events // args.streams, 1)
    loop = new_loop()
    print(f"event: {len(EVENT)} bytes; event loop: {type(loop).__module__}")
    try:
        report(f"one stream, {args.events} events", measure(loop, 1, args.events, False, args.repeats))
        report(
            f"{args.streams} concurrent streams, {per_stream} events each, one loop wait per event",
            measure(loop, args.streams, per_stream, True, args.repeats),
        )
    finally:
        close(loop)


if __name__ == "__main__":
    main()
