"""A scripted raw-text OpenAI-compatible backend for the gateway tests.

It answers `POST /v1/chat/completions` like vLLM or SGLang run without
parsers: the scripted raw text, streamed in `chunk_size` pieces or whole.
Tests set the script on the instance (the server runs in-process, in a
background thread) and read back what the gateway sent upstream.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Callable

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

BACKEND_KEY = "sk-backend-test-key"  # what the gateway's config sends upstream
USAGE = {"prompt_tokens": 7, "completion_tokens": 11, "total_tokens": 18}
ENGINE_METRICS = (  # a vLLM scrape's load gauges (vllm/v1/metrics/loggers.py's names), and a family the gateway has too
    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    'vllm:num_requests_waiting{engine="0",model_name="fake-qwen3"} 3.0\n'
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    'vllm:kv_cache_usage_perc{engine="0",model_name="fake-qwen3"} 0.25\n'
    "# HELP parsegate_requests_total The engine exporting a family the gateway exports too.\n"
    "# TYPE parsegate_requests_total counter\n"
    "parsegate_requests_total 99.0\n"
)
VLLM_AUTO_REFUSED = {  # vLLM's answer to tool_choice "auto" without --enable-auto-tool-choice
    "error": {
        "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}
VLLM_AUTO_REFUSED_FLAT = {  # the same answer from vLLM before 0.10.2 (its flat ErrorResponse)
    "object": "error",
    **VLLM_AUTO_REFUSED["error"],
}


def token_logprobs(text: str) -> dict:
    """OpenAI-shaped logprobs for `text`, one token per character."""
    return {
        "content": [{"token": char, "logprob": -0.5, "bytes": list(char.encode()), "top_logprobs": []} for char in text]
    }


class FakeBackend:
    """Scripted replies, one raw text per choice; `requests` records the
    upstream requests as (headers, JSON body)."""

    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/completions", self._completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/tokenize", self._tokenize, methods=["POST"]),
                Route("/metrics", self._metrics, methods=["GET"]),
            ]
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gate: asyncio.Event | None = None
        self._test = 0  # bumped by reset(): a request held across it belongs to an earlier test
        self.reset()

    def reset(self) -> None:
        self._test += 1
        self.release()
        self.replies: list[str] = ["Hello!"]
        self.chunk_size = 4
        self.finish_reason = "stop"
        self.stop_fields: dict = {}  # further fields of a finishing choice (vLLM's `stop_reason`, SGLang's `matched_stop`)
        self.error: tuple[int, bytes] | None = None  # answer with this status and body
        self.error_headers: dict[str, str] = {}  # headers of the `error` answer
        self.error_stream: tuple[int, int] | None = None  # answer with this status and this many bytes, streamed
        self.cut = False  # stream the text, then end without finish_reason or [DONE]
        self.delay = 0.0  # seconds before answering (for timeouts)
        self.pace = 0.0  # seconds before each streamed event (a server generating)
        self.together = False  # stream every choice's piece in one chunk, as a batching server may
        self.hold_headers = False  # answer nothing until `release()`
        self.hold_after: int | None = None  # stream this many events, then wait for `release()`
        self.drop_after: int | None = None  # stream this many events, then drop the connection
        self.raw_stream: list[bytes] | None = None  # stream these bytes instead of the script
        self.stream_abandoned = threading.Event()  # a stream ended because the gateway went away
        self.held = threading.Event()  # a request is waiting for `release()`
        self.sent_bytes = 0  # bytes of stream events the server has taken (written or buffered)
        self.requests: list[tuple[dict, dict]] = []
        self.listings: list[dict] = []  # the headers of each GET /v1/models (a listing, or the server-kind probe)
        self.client_ports: list[int | None] = []  # the gateway's end of each chat request's connection
        self.parsed_deltas: list[dict] | None = None  # a backend running its own parsers
        self.models = ["Qwen/Qwen3-8B", "zai-org/GLM-4.6"]  # what GET /v1/models lists
        self.refuse_auto_tools = False  # refuse tools with tool_choice absent or "auto", as a plain vLLM
        self.auto_refusal = VLLM_AUTO_REFUSED  # the body of that 400
        self.gzip = False  # streamed text completions and whole chat answers: gzip-compressed, with Content-Encoding
        self.padding = 0  # whole chat answers: this many bytes of JSON whitespace inside, streamed in 64 KiB pieces
        self.answer: Callable[[dict], str] | None = None  # the reply as a function of the request body
        self.token_count = 42  # what POST /tokenize counts (vLLM's tokenizer endpoint, at the server root)
        self.usage: object = USAGE  # the chat answers' `usage` (streamed: when the request asks for it)
        self.metrics = ENGINE_METRICS  # what GET /metrics serves, at the server root as vLLM does
        self.metrics_asked: list[dict] = []  # the headers of each GET /metrics

    def script_parsed(self, *deltas: dict) -> None:
        """Answer like a backend with its own parsers on: these deltas streamed
        as they are, or merged into one message when not streamed."""
        self.parsed_deltas = list(deltas)

    def script(self, *replies: str, chunk_size: int = 4) -> None:
        self.replies = list(replies)
        self.chunk_size = chunk_size

    def release(self) -> None:
        """Let every request held by `hold_headers` / `hold_after` go on."""
        if self._gate is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._gate.set)
        self._gate = None

    async def _wait_for_release(self) -> bool:
        """Wait for `release()`; False if the test that held the request is over."""
        if self._gate is None:
            self._loop, self._gate = asyncio.get_running_loop(), asyncio.Event()
        gate, test = self._gate, self._test
        self.held.set()
        await gate.wait()
        return self._test == test

    async def _hold_unless_gateway_leaves(self, request: Request) -> bool:
        """Wait for `release()`; False if the test is over or the gateway
        closed the connection first (then `stream_abandoned` is set)."""

        async def gateway_left() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass

        released, left = asyncio.ensure_future(self._wait_for_release()), asyncio.ensure_future(gateway_left())
        done, pending = await asyncio.wait({released, left}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if left in done:
            self.stream_abandoned.set()
            return False
        return released.result()

    @property
    def last_body(self) -> dict:
        return self.requests[-1][1]

    async def _chat(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append((dict(request.headers), body))
        self.client_ports.append(request.client.port if request.client else None)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.hold_headers and not await self._hold_unless_gateway_leaves(request):
            return Response(status_code=503)
        if self.error is not None:
            status, content = self.error
            return Response(content, status_code=status, media_type="application/json", headers=self.error_headers)
        if self.error_stream is not None:
            status, size = self.error_stream
            pieces = _yielding([b"x" * 65536] * (size // 65536))
            return StreamingResponse(self._faulty(pieces), status_code=status, media_type="text/plain")
        if self.refuse_auto_tools and body.get("tools") and body.get("tool_choice", "auto") == "auto":
            return Response(orjson.dumps(self.auto_refusal), status_code=400, media_type="application/json")
        if self.parsed_deltas is not None:
            return self._parsed(body)
        replies = [self.answer(body)] if self.answer is not None else self.replies[: body.get("n") or 1]
        if body.get("stream"):
            events = self._events(body, replies) if self.raw_stream is None else _raw(self.raw_stream)
            return StreamingResponse(self._faulty(events), media_type="text/event-stream")
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "logprobs": token_logprobs(text) if body.get("logprobs") else None,
                "finish_reason": self.finish_reason,
                **self.stop_fields,
            }
            for i, text in enumerate(replies)
        ]
        completion = {"id": "up-1", "object": "chat.completion", "model": body["model"], "choices": choices}
        answer = orjson.dumps({**completion, "usage": self.usage})
        if self.gzip:
            return Response(gzip.compress(answer), media_type="application/json", headers={"content-encoding": "gzip"})
        if self.padding:
            pieces = [b"{", *[b" " * 65536] * (self.padding // 65536), answer[1:]]
            return StreamingResponse(self._faulty(_yielding(pieces)), media_type="application/json")
        return Response(answer, media_type="application/json")

    async def _events(self, body: dict, replies: list[str]):
        def event(choices: list[dict], **extra) -> bytes:
            chunk = {"id": "up-1", "object": "chat.completion.chunk", "model": body["model"], "choices": choices}
            return b"data: " + orjson.dumps({**chunk, **extra}) + b"\n\n"

        for i in range(len(replies)):  # vLLM opens each choice with the role
            yield event([{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        size = self.chunk_size
        longest = max(len(text) for text in replies)
        for start in range(0, longest, size):
            pieces = [
                {"index": i, "delta": {"content": text[start : start + size]}, "finish_reason": None}
                for i, text in enumerate(replies)
                if start < len(text)
            ]
            if body.get("logprobs"):
                for piece in pieces:
                    piece["logprobs"] = token_logprobs(piece["delta"]["content"])
            for group in [pieces] if self.together else ([piece] for piece in pieces):
                yield event(group)
        if self.cut:
            return
        for i in range(len(replies)):
            yield event([{"index": i, "delta": {}, "finish_reason": self.finish_reason, **self.stop_fields}])
        if (body.get("stream_options") or {}).get("include_usage"):
            yield event([], usage=self.usage)
        yield b"data: [DONE]\n\n"

    def _parsed(self, body: dict) -> Response:
        def event(delta: dict, reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": reason}
            return (
                b"data: "
                + orjson.dumps({"id": "up-1", "object": "chat.completion.chunk", "choices": [choice]})
                + b"\n\n"
            )

        if body.get("stream"):
            events = [event({"role": "assistant", "content": ""})]
            events += [event(delta) for delta in self.parsed_deltas]
            events += [event({}, self.finish_reason), b"data: [DONE]\n\n"]
            return StreamingResponse(iter(events), media_type="text/event-stream")
        message: dict = {"role": "assistant", "content": None}
        calls: dict[int, dict] = {}
        for delta in self.parsed_deltas:
            for key in ("content", "reasoning_content", "reasoning"):
                if key in delta:
                    message[key] = (message.get(key) or "") + delta[key]
            for call in delta.get("tool_calls", ()):
                merged = calls.setdefault(
                    call["index"], {"id": call.get("id"), "type": "function", "function": {"name": "", "arguments": ""}}
                )
                merged["function"]["name"] += call.get("function", {}).get("name") or ""
                arguments = call.get("function", {}).get("arguments") or ""
                if isinstance(arguments, str):
                    merged["function"]["arguments"] += arguments
                else:  # some servers send the arguments as an object
                    merged["function"]["arguments"] = arguments
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return Response(
            orjson.dumps({"id": "up-1", "object": "chat.completion", "choices": [choice]}),
            media_type="application/json",
        )

    async def _completions(self, request: Request) -> Response:
        """Text completions: the first scripted reply as `text`, streamed or whole."""
        body = orjson.loads(await request.body())
        self.requests.append((dict(request.headers), body))
        if self.hold_headers and not await self._hold_unless_gateway_leaves(request):
            return Response(status_code=503)
        if self.error is not None:
            status, content = self.error
            return Response(content, status_code=status, media_type="application/json")
        text, size = self.replies[0], self.chunk_size
        envelope = {"id": "cmpl-up-1", "object": "text_completion", "model": body["model"]}
        if not body.get("stream"):
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": self.finish_reason,
                **self.stop_fields,
            }
            return Response(
                orjson.dumps({**envelope, "choices": [choice], "usage": USAGE}), media_type="application/json"
            )

        def event(piece: str, reason: str | None) -> bytes:
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": reason}
            if reason is not None:
                choice.update(self.stop_fields)
            return b"data: " + orjson.dumps({**envelope, "choices": [choice]}) + b"\n\n"

        events = [event(text[start : start + size], None) for start in range(0, len(text), size)]
        if self.raw_stream is not None:
            events = self.raw_stream
        elif not self.cut:
            events += [event("", self.finish_reason), b"data: [DONE]\n\n"]
        if self.gzip:
            return Response(
                gzip.compress(b"".join(events)), media_type="text/event-stream", headers={"content-encoding": "gzip"}
            )
        return StreamingResponse(self._faulty(_raw(events)), media_type="text/event-stream")

    async def _models(self, request: Request) -> Response:
        self.listings.append(dict(request.headers))
        if self.error is not None:
            status, content = self.error
            return Response(content, status_code=status, media_type="application/json")
        data = [{"id": name, "object": "model", "owned_by": "fake"} for name in self.models]
        return Response(orjson.dumps({"object": "list", "data": data}), media_type="application/json")

    async def _metrics(self, request: Request) -> Response:
        self.metrics_asked.append(dict(request.headers))
        return Response(self.metrics, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def _tokenize(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append((dict(request.headers), body))
        if self.error is not None:
            status, content = self.error
            return Response(content, status_code=status, media_type="application/json")
        answer = {"count": self.token_count, "tokens": list(range(self.token_count)), "max_model_len": 4096}
        return Response(orjson.dumps(answer), media_type="application/json")

    async def _faulty(self, events):
        """`events`, held or dropped as scripted; notes a gateway that left."""
        finished = False
        count, test, abandoned = 0, self._test, self.stream_abandoned
        try:
            async for event in events:
                if self._test != test:  # the gateway left and a later test began
                    return
                if count == self.hold_after and not await self._wait_for_release():
                    return
                if count == self.drop_after:
                    raise ConnectionAbortedError("fake backend dropped the connection")
                if self.pace:
                    await asyncio.sleep(self.pace)
                yield event
                count += 1
                self.sent_bytes += len(event)
            finished = True
        finally:
            if not finished:
                abandoned.set()


async def _raw(pieces: list[bytes]):
    for piece in pieces:
        yield piece


async def _yielding(pieces: list[bytes]):
    """`pieces`, letting the server notice a client that left between two."""
    for piece in pieces:
        await asyncio.sleep(0)
        yield piece
