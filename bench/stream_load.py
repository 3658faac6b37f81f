"""Bounded streaming load on loopback, with the gap between two chunks of one stream.

`C` keep-alive HTTP/1.1 connections (raw asyncio protocols, httptools'
C parser, uvloop: cheap, so the load generator does not set the pace) send
`N` POST requests with one body, streamed or not. The first request of
connection `i` waits `ramp * i / C` seconds, so that arrivals are spread
over `ramp` seconds instead of landing at once. Every socket read that
carries response body is time-stamped: a stream's gaps are the times
between two such reads (its first read is its time to first byte).

Reported, as one JSON line: requests that ended well (status 200 and, when
streamed, the surface's final event seen), errors by kind, time to first
byte, the gaps pooled over every stream (p50, p99, max) and each stream's
own p99 gap (median and worst over the streams), and the CPU seconds of
the processes named with `--pid NAME=PID` (utime + stime from
/proc/PID/stat, children included, so that `parsegate serve --workers N`
counts all its workers) over the measured window, after `--warmup`
requests. `foreign_cpu_s` is what the rest of the machine used meanwhile
(busy time in /proc/stat less the named processes and this one).

Bounds: exactly N requests (and the warm-up), a per-request timeout, and
`--max-seconds` for the whole measured window. Only loopback URLs.

    python -m bench.stream_load --url http://127.0.0.1:8100/v1/chat/completions \
        --body '{"model": "fake", "messages": [...], "stream": true}' -c 48 -n 96 --ramp 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httptools

TICKS = os.sysconf("SC_CLK_TCK")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants, from /proc/PID/task/*/children."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                continue
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` and its descendants (the fields after the name)."""
    total = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (first line of /proc/stat)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / TICKS


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Outcome:
    __slots__ = ("status", "reads", "ended", "error")

    def __init__(self) -> None:
        self.status = 0
        self.reads: list[float] = []  # perf_counter of each socket read that carried body
        self.ended = False
        self.error: str | None = None


class Connection(asyncio.Protocol):
    """One keep-alive connection, one request at a time."""

    def __init__(self, end_marker: bytes) -> None:
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport subclasses
        self.end_marker = end_marker
        self.parser: httptools.HttpResponseParser | None = None
        self.outcome = Outcome()
        self.done: asyncio.Future[Outcome] | None = None
        self.tail = b""
        self.body_seen = False
        self.end_marker_seen = False
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc or ConnectionError("connection closed"))

    def send(self, raw: bytes) -> asyncio.Future[Outcome]:
        self.outcome = Outcome()
        self.outcome.reads.append(time.perf_counter())  # the request's start
        self.parser = httptools.HttpResponseParser(self)
        self.tail = b""
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return self.done

    def data_received(self, data: bytes) -> None:
        assert self.parser is not None and self.done is not None
        self.body_seen = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            if not self.done.done():
                self.done.set_exception(error)
        if self.body_seen:
            self.outcome.reads.append(time.perf_counter())
        if self.outcome.ended and not self.done.done():
            self.done.set_result(self.outcome)

    def on_headers_complete(self) -> None:
        assert self.parser is not None
        self.outcome.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.body_seen = True
        if self.end_marker:
            window = self.tail + body
            if self.end_marker in window:
                self.end_marker_seen = True
            self.tail = window[-len(self.end_marker) :]

    def on_message_complete(self) -> None:
        self.outcome.ended = True


def request_bytes(host: str, port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


async def run(args: argparse.Namespace) -> dict:
    url = urlsplit(args.url)
    host, port = url.hostname or "", url.port or 80
    if host not in LOOPBACK and not host.startswith("127."):
        sys.exit("stream_load only sends to loopback addresses")
    body = Path(args.body[1:]).read_bytes() if args.body.startswith("@") else args.body.encode()
    raw = request_bytes(host, port, url.path, body)
    end_marker = args.end_marker.encode()
    loop = asyncio.get_running_loop()
    outcomes: list[Outcome] = []
    issued = 0

    async def connection_loop(index: int, total: int, ramp: float, keep: bool) -> None:
        nonlocal issued
        if ramp:
            await asyncio.sleep(ramp * index / args.concurrency)
        connection: Connection | None = None
        while issued < total:
            issued += 1
            try:
                if connection is None or connection.lost:
                    _, connection = await loop.create_connection(lambda: Connection(end_marker), host, port)
                connection.end_marker_seen = not end_marker
                outcome = await asyncio.wait_for(connection.send(raw), args.timeout)
                if outcome.status != 200:
                    outcome.error = f"http {outcome.status}"
                elif not connection.end_marker_seen:
                    outcome.error = "no final event"
            except Exception as error:  # every failure is counted, by its kind
                outcome = Outcome()
                outcome.error = type(error).__name__
                if connection is not None:
                    connection.transport.close()
                connection = None
            if keep:
                outcomes.append(outcome)
        if connection is not None:
            connection.transport.close()

    if args.warmup:
        warm = min(args.concurrency, args.warmup)
        await asyncio.gather(*(connection_loop(i, args.warmup, 0.0, False) for i in range(warm)))
        issued = 0
    pids = {name: int(pid) for name, _, pid in (spec.partition("=") for spec in args.pid)}
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    busy_before, own_before = machine_busy_seconds(), resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    loops = [asyncio.ensure_future(connection_loop(i, args.requests, args.ramp, True)) for i in range(args.concurrency)]
    _, late = await asyncio.wait(loops, timeout=args.max_seconds)
    for task in late:
        task.cancel()
    wall = time.perf_counter() - started
    cpu = {name: round(cpu_seconds(pid) - cpu_before[name], 3) for name, pid in pids.items()}
    own_after = resource.getrusage(resource.RUSAGE_SELF)
    own = own_after.ru_utime - own_before.ru_utime + own_after.ru_stime - own_before.ru_stime
    foreign = machine_busy_seconds() - busy_before - own - sum(cpu.values())

    ok = [outcome for outcome in outcomes if outcome.error is None]
    kinds: dict[str, int] = {}
    for outcome in outcomes:
        if outcome.error is not None:
            kinds[outcome.error] = kinds.get(outcome.error, 0) + 1
    ttfb = [outcome.reads[1] - outcome.reads[0] for outcome in ok if len(outcome.reads) > 1]
    stream_gaps = [[b - a for a, b in zip(o.reads[1:], o.reads[2:], strict=False)] for o in ok]
    gaps = [gap for per_stream in stream_gaps for gap in per_stream]
    stream_p99 = [percentile(per_stream, 0.99) for per_stream in stream_gaps if per_stream]
    missing = args.requests - len(outcomes)
    return {
        "label": args.label,
        "requests": args.requests,
        "ok": len(ok),
        "errors": len(outcomes) - len(ok) + missing,
        "error_kinds": kinds | ({"not run in time": missing} if missing else {}),
        "wall_s": round(wall, 3),
        "ttfb_ms_p50": round(percentile(ttfb, 0.5) * 1e3, 2),
        "ttfb_ms_p99": round(percentile(ttfb, 0.99) * 1e3, 2),
        "gap_ms_p50": round(percentile(gaps, 0.5) * 1e3, 2),
        "gap_ms_p99": round(percentile(gaps, 0.99) * 1e3, 2),
        "gap_ms_max": round(max(gaps, default=float("nan")) * 1e3, 2),
        "stream_p99_gap_ms_median": round(statistics.median(stream_p99) * 1e3, 2) if stream_p99 else None,
        "stream_p99_gap_ms_worst": round(max(stream_p99) * 1e3, 2) if stream_p99 else None,
        "cpu_s": cpu,
        "loadgen_cpu_s": round(own, 3),
        "foreign_cpu_s": round(foreign, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument(
        "--body", required=True, help="the JSON request body, sent as it is; @PATH: the file's (for a long body)"
    )
    parser.add_argument("--end-marker", default="", help="text the stream's final event holds (checked when set)")
    parser.add_argument("-c", "--concurrency", type=int, default=32)
    parser.add_argument("-n", "--requests", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds over which the connections start")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="bound of the measured window")
    parser.add_argument("--pid", action="append", default=[], help="NAME=PID whose CPU to count")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:  # the `speed` extra is not installed: asyncio's own loop
        pass
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    main()
