#!/usr/bin/env python3
"""Minimal, fast OpenAI-compatible *raw-text* backend for gateway benchmarks.

Copied from ../shared/bench/fake_backend.py, the shared bench kit whose
anchors bench/README.md quotes, so that the bench runs from a clone on its
own; unchanged but for formatting, `--reuse-port`, which lets several
processes serve one port (SO_REUSEPORT: the kernel spreads the connections),
so that the backend keeps up with a gateway of several workers, and
`--pace step`, which writes every stream's chunks on one shared clock.

Serves on 127.0.0.1 only (refuses any other host):
  POST /v1/chat/completions   stream and non-stream (choices[0].delta.content / message.content)
  POST /v1/completions        stream and non-stream (choices[0].text)
  GET  /v1/models, GET /health

It replays a configurable raw text (default: Qwen3 style
``<think>...</think>`` + answer + ``<tool_call>\\n{json}\\n</tool_call>``) cut into
chunks of K characters, one SSE event per chunk, in OpenAI chunk JSON format.
Every response is pre-encoded once (cached per parameter set), so the per-request
cost is a dict lookup plus socket writes.  Implemented on raw asyncio Protocols +
uvloop + httptools (no framework), HTTP/1.1 keep-alive, chunked transfer encoding.

Parameters (precedence: request body field > URL query > CLI flag > env var):
  chunk chars K       --chunk-chars     FAKE_CHUNK_CHARS  ?k=        body "fake_chunk_chars"   (default 4)
  number of chunks    --num-chunks      FAKE_NUM_CHUNKS   ?chunks=   body "fake_num_chunks"    (default 200)
                      text is padded/truncated so len(text) == K * chunks (qwen3_tool cannot go
                      below its fixed part, ~150 chars); 0 = use the preset text as is
  per-chunk delay ms  --delay-ms        FAKE_DELAY_MS     ?delay_ms= body "fake_delay_ms"      (default 0)
  preset              --preset          FAKE_PRESET       ?preset=   body "fake_preset"
                      qwen3_tool (default) | qwen3_long_arg | plain
  raw text file       --text-file       FAKE_TEXT_FILE    (overrides preset; body "fake_text" too)
  write mode          --write-mode      FAKE_WRITE_MODE   ?write=    body "fake_write_mode"
                      event (default): one transport.write per SSE event (one send() each
                      when the socket is not backed up) | burst: whole stream in one write
  port                --port            FAKE_PORT         (default 8100)

With a delay, the backend sleeps between events (not after the last one):
each stream on its own clock (`--pace own`, the default, FAKE_PACE), or
until the next tick of one clock that every stream shares (`--pace step`),
as a batching GPU server writes one token of each sequence per decode step.
With stream=true the events are: first chunk with delta.role="assistant" and the first
K chars, one chunk per further K chars, a final chunk with finish_reason "stop" (and
empty delta), then -- when stream_options.include_usage is true -- a usage chunk with
``choices: []``, then ``data: [DONE]``.  So a stream has chunks+1 (+1 with usage)
JSON events plus [DONE].

Run:  taskset -c 0 python fake_backend.py --port 8100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from urllib.parse import parse_qs

import orjson

try:
    import httptools
except ImportError:  # only needed to serve; preset_text() is importable without it
    httptools = None

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None

CREATED = 1700000000

# ---------------------------------------------------------------------------
# texts
REASONING_FILLER = (
    "The user wants the weather in Paris. I should call the get_weather tool with "
    "the city set to Paris and the unit in celsius, then summarise the result. "
)
LONG_ARG_FILLER = 'def f(x):\n    return x * 2  # "quoted" and \\ escaped\n'


def preset_text(name: str, target: int) -> str:
    """Return the raw text for a preset, padded/truncated to `target` chars (0 = natural)."""
    if name == "plain":
        base = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
        if target <= 0:
            return base * 4
        return (base * (target // len(base) + 1))[:target]
    if name == "qwen3_long_arg":
        head = "<think>\nI will write the file.\n</think>\n\nWriting it now.\n<tool_call>\n"
        tail_fn = lambda content: (  # noqa: E731
            json.dumps({"name": "write_file", "arguments": {"path": "a.py", "content": content}}) + "\n</tool_call>"
        )
        if target <= 0:
            return head + tail_fn(LONG_ARG_FILLER * 4)
        content = ""
        # grow the string argument until the whole text reaches target, then trim
        while len(head) + len(tail_fn(content)) < target:
            content += LONG_ARG_FILLER
        while content and len(head) + len(tail_fn(content)) > target:
            content = content[:-1]
        text = head + tail_fn(content)
        return text if len(text) == target else text.ljust(target)  # pad with spaces if needed
    # qwen3_tool (default)
    tool = (
        "\n<tool_call>\n"
        + json.dumps({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})
        + "\n</tool_call>"
    )
    answer = "\n</think>\n\nLet me check the weather for you."
    fixed = len("<think>\n") + len(answer) + len(tool)
    if target <= 0:
        reasoning = REASONING_FILLER * 2
    else:
        need = max(0, target - fixed)
        reasoning = (REASONING_FILLER * (need // len(REASONING_FILLER) + 1))[:need]
    return "<think>\n" + reasoning + answer + tool


# ---------------------------------------------------------------------------
# pre-encoding
def _frame(data: bytes) -> bytes:
    """One HTTP/1.1 chunked-encoding frame."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _sse(obj) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


class Encoded:
    __slots__ = ("events", "burst", "nonstream")

    def __init__(self, events, nonstream):
        self.events = events  # list[bytes] each already chunk-framed
        self.burst = b"".join(events)
        self.nonstream = nonstream  # full HTTP response bytes


HDR_STREAM = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


def encode(kind: str, model: str, text: str, k: int, include_usage: bool) -> Encoded:
    chat = kind == "chat"
    pieces = [text[i : i + k] for i in range(0, len(text), k)] or [""]
    cid = "chatcmpl-fake" if chat else "cmpl-fake"
    obj = "chat.completion.chunk" if chat else "text_completion"
    usage = {"prompt_tokens": 10, "completion_tokens": len(pieces), "total_tokens": 10 + len(pieces)}
    evs = []
    for i, p in enumerate(pieces):
        if chat:
            delta = {"role": "assistant", "content": p} if i == 0 else {"content": p}
            ch = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        else:
            ch = {"index": 0, "text": p, "logprobs": None, "finish_reason": None}
        evs.append(_sse({"id": cid, "object": obj, "created": CREATED, "model": model, "choices": [ch]}))
    if chat:
        last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    else:
        last = {"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}
    evs.append(_sse({"id": cid, "object": obj, "created": CREATED, "model": model, "choices": [last]}))
    if include_usage:
        evs.append(_sse({"id": cid, "object": obj, "created": CREATED, "model": model, "choices": [], "usage": usage}))
    evs.append(b"data: [DONE]\n\n")
    framed = [_frame(e) for e in evs]
    framed[0] = HDR_STREAM + framed[0]
    framed[-1] += b"0\r\n\r\n"  # [DONE] and the chunked terminator leave together
    # non-stream
    if chat:
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
    else:
        body = {
            "id": cid,
            "object": "text_completion",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "stop"}],
            "usage": usage,
        }
    b = orjson.dumps(body)
    ns = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(b), b)
    return Encoded(framed, ns)


# ---------------------------------------------------------------------------
class Cfg:
    k = 4
    chunks = 200
    delay_ms = 0.0
    pace = "own"
    preset = "qwen3_tool"
    text_file = None
    write_mode = "event"


CACHE: dict = {}
TEXTS: dict = {}
STATS = {"requests": 0, "events": 0}


def get_text(preset, text_file, target, inline=None):
    if inline is not None:
        return inline
    key = (preset, text_file, target)
    t = TEXTS.get(key)
    if t is None:
        if text_file:
            with open(text_file, encoding="utf-8") as f:
                t = f.read()
            if target > 0:
                t = (t * (target // max(1, len(t)) + 1))[:target]
        else:
            t = preset_text(preset, target)
        TEXTS[key] = t
    return t


def simple(status: int, body: bytes, ctype=b"application/json") -> bytes:
    reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found", 405: b"Method Not Allowed"}.get(status, b"X")
    return b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s" % (
        status,
        reason,
        ctype,
        len(body),
        body,
    )


class Conn(asyncio.Protocol):
    __slots__ = ("t", "p", "url", "body", "paused", "drain", "busy", "closed", "queue")

    def __init__(self):
        self.t = None
        self.p = httptools.HttpRequestParser(self)
        self.url = b""
        self.body = []
        self.paused = False
        self.drain = None
        self.closed = False
        self.busy = None
        self.queue = []

    # transport callbacks
    def connection_made(self, transport):
        self.t = transport

    def connection_lost(self, exc):
        self.closed = True
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)

    def data_received(self, data):
        try:
            self.p.feed_data(data)
        except httptools.HttpParserError:
            self.t.write(simple(400, b'{"error":"bad request"}'))
            self.t.close()

    # parser callbacks
    def on_message_begin(self):
        self.url = b""
        self.body = []

    def on_url(self, url):
        self.url += url

    def on_body(self, body):
        self.body.append(body)

    def on_message_complete(self):
        req = (self.p.get_method(), self.url, b"".join(self.body), self.p.should_keep_alive())
        if self.busy is not None and not self.busy.done():
            self.queue.append(req)  # pipelined: serve in order
        else:
            self._start(req)

    def _start(self, req):
        out = self.handle(*req)
        if out is not None:  # coroutine (streaming)
            self.busy = asyncio.ensure_future(out)
            self.busy.add_done_callback(self._next)

    def _next(self, _fut):
        if self.queue and not self.closed:
            self._start(self.queue.pop(0))

    # request handling
    def handle(self, method, url, body, keep_alive):
        STATS["requests"] += 1
        u = httptools.parse_url(url)
        path = u.path
        if method == b"GET":
            if path == b"/health":
                self._send(b'{"status":"ok"}', keep_alive)
            elif path == b"/v1/models":
                self._send(b'{"object":"list","data":[{"id":"fake","object":"model","owned_by":"bench"}]}', keep_alive)
            else:
                self._send(b'{"error":"not found"}', keep_alive, 404)
            return None
        if method != b"POST" or path not in (b"/v1/chat/completions", b"/v1/completions"):
            self._send(b'{"error":"not found"}', keep_alive, 404)
            return None
        try:
            req = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            self._send(b'{"error":"invalid json"}', keep_alive, 400)
            return None
        q = {k: v[-1] for k, v in parse_qs(u.query.decode()).items()} if u.query else {}
        k = int(req.get("fake_chunk_chars", q.get("k", Cfg.k)))
        chunks = int(req.get("fake_num_chunks", q.get("chunks", Cfg.chunks)))
        delay = float(req.get("fake_delay_ms", q.get("delay_ms", Cfg.delay_ms))) / 1000.0
        preset = req.get("fake_preset", q.get("preset", Cfg.preset))
        wmode = req.get("fake_write_mode", q.get("write", Cfg.write_mode))
        inline = req.get("fake_text")
        model = str(req.get("model", "fake"))
        stream = bool(req.get("stream", False))
        so = req.get("stream_options") or {}
        usage = bool(so.get("include_usage", False)) if isinstance(so, dict) else False
        kind = "chat" if path == b"/v1/chat/completions" else "completion"
        key = (kind, model, preset, Cfg.text_file, inline, k, chunks, usage)
        enc = CACHE.get(key)
        if enc is None:
            text = get_text(preset, Cfg.text_file, k * chunks if chunks > 0 else 0, inline)
            enc = encode(kind, model, text, k, usage)
            if inline is None:
                CACHE[key] = enc
        if not stream:
            self.t.write(enc.nonstream)
            if not keep_alive:
                self.t.close()
            return None
        STATS["events"] += len(enc.events)
        if delay <= 0 and wmode == "burst":
            self.t.write(enc.burst)
            if not keep_alive:
                self.t.close()
            return None
        return self._stream(enc.events, delay, keep_alive)

    async def _stream(self, events, delay, keep_alive):
        t = self.t
        loop = asyncio.get_running_loop()
        last = len(events) - 1
        for i, ev in enumerate(events):
            if self.closed:
                return
            t.write(ev)
            if self.paused:
                self.drain = loop.create_future()
                await self.drain
                self.drain = None
            if delay > 0 and i < last:  # no sleep after the final frame (keep-alive reuse)
                # `step`: the next chunk at the next tick of one clock that every stream shares, as a
                # batching server (vLLM, SGLang, llama.cpp) writes a token of each sequence per decode
                # step; the tick after the nearest one, since a timer may fire a little early or late
                now = loop.time()
                await asyncio.sleep((round(now / delay) + 1) * delay - now if Cfg.pace == "step" else delay)
        if not keep_alive and not self.closed:
            t.close()

    def _send(self, body, keep_alive, status=200):
        self.t.write(simple(status, body))
        if not keep_alive:
            self.t.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    env = os.environ.get
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=int(env("FAKE_PORT", "8100")))
    ap.add_argument("--chunk-chars", type=int, default=int(env("FAKE_CHUNK_CHARS", "4")))
    ap.add_argument("--num-chunks", type=int, default=int(env("FAKE_NUM_CHUNKS", "200")))
    ap.add_argument("--delay-ms", type=float, default=float(env("FAKE_DELAY_MS", "0")))
    ap.add_argument(
        "--preset", default=env("FAKE_PRESET", "qwen3_tool"), choices=["qwen3_tool", "qwen3_long_arg", "plain"]
    )
    ap.add_argument("--text-file", default=env("FAKE_TEXT_FILE"))
    ap.add_argument("--reuse-port", action="store_true", help="share the port with other processes (SO_REUSEPORT)")
    ap.add_argument(
        "--pace",
        default=env("FAKE_PACE", "own"),
        choices=["own", "step"],
        help="with a delay: each stream on its own clock (own), or every stream's chunks on one shared clock (step)",
    )
    ap.add_argument("--write-mode", default=env("FAKE_WRITE_MODE", "event"), choices=["event", "burst"])
    ap.add_argument("--print-text", action="store_true", help="print the configured text and exit")
    a = ap.parse_args()
    if not (a.host.startswith("127.") or a.host in ("localhost", "::1")):
        sys.exit("refusing to bind a non-loopback address")
    Cfg.k, Cfg.chunks, Cfg.delay_ms = a.chunk_chars, a.num_chunks, a.delay_ms
    Cfg.preset, Cfg.text_file, Cfg.write_mode, Cfg.pace = a.preset, a.text_file, a.write_mode, a.pace
    if a.print_text:
        print(get_text(Cfg.preset, Cfg.text_file, Cfg.k * Cfg.chunks if Cfg.chunks > 0 else 0))
        return
    if uvloop is not None:
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    srv = loop.run_until_complete(
        loop.create_server(Conn, a.host, a.port, backlog=4096, reuse_address=True, reuse_port=a.reuse_port or None)
    )
    print(
        f"fake_backend listening on http://{a.host}:{a.port} k={Cfg.k} chunks={Cfg.chunks} "
        f"delay_ms={Cfg.delay_ms} preset={Cfg.preset} write={Cfg.write_mode} pid={os.getpid()}",
        flush=True,
    )
    stop = asyncio.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    loop.run_until_complete(stop.wait())
    srv.close()
    print(f"fake_backend stats {STATS}", flush=True)


if __name__ == "__main__":
    main()
