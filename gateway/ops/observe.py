"""Per-request observation: a request id, a `RequestRecord` filled in as the
request runs, and at its end the request metrics and one log line.

`ObserveMiddleware` takes the id from the client's `X-Request-ID` (when it
is a sane token) or makes one, echoes it in the response header, and keeps
it in `request_id` for the upstream call. Handlers find the record at
`request.state.record`. Work per streamed chunk is one clock read and one
histogram observation (metrics.py's `LoopHistogram`); parser outcomes are counted once per choice.
At its end a request served by a model observes parsegate's own time in it
(ops/overhead.py: `parsegate_overhead_seconds`) and, with
`server.opentelemetry`, the GenAI conventions' metrics and span attributes
(ops/genai_telemetry.py); with `server.overhead_header`, the figure up to
the response's start goes out in `X-Parsegate-Overhead-Ms`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from contextvars import ContextVar

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.ops.errors import REQUEST_ID_HEADER, ApiError
from gateway.ops.genai_telemetry import GenAiTelemetry
from gateway.ops.ids import new_id
from gateway.ops.metrics import UNKNOWN_MODEL, LoopSeries, Metrics
from gateway.ops.overhead import OVERHEAD_HEADER, BackendWait, backend_wait
from gateway.ops.server_config import ServerConfig
from parsers import CallOutcomes

NO_PARSER = "none"  # the `parser` label of calls no tool-call parser of ours read
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")

request_id: ContextVar[str | None] = ContextVar("parsegate_request_id", default=None)
access_log = logging.getLogger("parsegate.access")


def request_id_headers() -> dict[str, str]:
    """The current request's id, as a header for the upstream request."""
    rid = request_id.get()
    return {REQUEST_ID_HEADER: rid} if rid else {}


def upstream_error_kind(error: ApiError) -> str:
    """The metric kind of an error raised by a backend call."""
    code = error.body["error"]["code"]
    if code == "upstream_timeout":
        return "timeout"
    if code == "upstream_unreachable":
        return "unreachable"
    if code == "upstream_invalid_response":
        return "invalid_response"
    return "backend_4xx" if error.status < 500 else "backend_5xx"


def stream_failure_kind(error: ApiError) -> str:
    """The metric kind of a failure after the stream has begun."""
    return {
        "upstream_timeout": "timeout",
        "upstream_unreachable": "connection_lost",
        "upstream_malformed": "malformed_chunk",
    }.get(error.body["error"].get("code"), "stream_error")


class RequestRecord:
    """What one request did: filled in by the handler and the stream relay."""

    def __init__(self, metrics: Metrics, request_id: str) -> None:
        self.metrics = metrics
        self.request_id = request_id
        self.started = time.perf_counter()
        self.model: str | None = None
        self.label = UNKNOWN_MODEL  # the model's metrics label (metrics.py)
        self.tool_call_parser: str | None = None
        self.stream = False
        self.status: int | None = None
        self.first_text_at: float | None = None
        self.last_text_at = 0.0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.upstream_error: str | None = None
        self.cut: str | None = None  # why the gateway cut the stream short of its end
        self.finish_reasons: list[str] = []  # each choice's, as chat completions says it
        self.backend_wait = BackendWait()  # ops/overhead.py
        self.ended = False  # its overhead and GenAI telemetry are recorded
        self._inter_chunk: LoopSeries | None = None  # the model's inter-chunk histogram, once the model is known

    def serves(self, model: str, tool_call_parser: str | None, stream: bool) -> None:
        """The request names configured `model`; its parse uses `tool_call_parser`."""
        self.model, self.tool_call_parser, self.stream = model, tool_call_parser, stream
        self.label = self.metrics.model_label(model)
        self._inter_chunk = self.metrics.inter_chunk_latency.labels(self.label)

    def text_chunk(self) -> None:
        """A backend chunk carrying text arrived."""
        now = time.perf_counter()
        if self.first_text_at is None:
            self.first_text_at = now
            self.metrics.time_to_first_token.labels(self.label).observe(now - self.started)
        else:
            assert self._inter_chunk is not None, "serves() names the model before text comes"
            self._inter_chunk.observe(now - self.last_text_at)
        self.last_text_at = now

    def usage(self, usage: object) -> None:
        """The backend's `usage` object, counted once per request."""
        if not isinstance(usage, dict):
            return
        for kind in ("prompt", "completion"):
            tokens = usage.get(f"{kind}_tokens")
            if isinstance(tokens, int) and tokens >= 0:
                setattr(self, f"{kind}_tokens", tokens)
                self.metrics.tokens.labels(self.label, kind).inc(tokens)

    def parsed(self, outcomes: CallOutcomes | None) -> None:
        """One choice's tool-call outcomes, once its parse has finished."""
        if outcomes is None:
            return
        labels = (self.label, self.tool_call_parser or NO_PARSER)
        for counter, count in (
            (self.metrics.tool_calls, outcomes.calls),
            (self.metrics.tool_call_fallbacks, outcomes.fallbacks),
            (self.metrics.invalid_arguments, outcomes.invalid_arguments),
        ):
            if count:
                counter.labels(*labels).inc(count)

    def finished(self, reason: str | None) -> None:
        """A choice ended, for `reason` (None: the backend gave none)."""
        if reason is not None:
            self.finish_reasons.append(reason)

    def overhead(self, now: float) -> float:
        """Seconds spent in parsegate up to `now` (perf_counter): the wall
        time less the wait for the backend (ops/overhead.py)."""
        return max(now - self.started - self.backend_wait.seconds, 0.0)

    def upstream_failed(self, kind: str) -> None:
        self.upstream_error = kind
        self.metrics.upstream_errors.labels(self.label, kind).inc()

    def stream_cut(self, reason: str) -> None:
        """The gateway cut the stream short of its end (`client_stalled`)."""
        self.cut = reason
        self.metrics.streams_cut.labels(self.label, reason).inc()

    def fields(self) -> dict:
        """The log line's fields."""
        ttft = None if self.first_text_at is None else round((self.first_text_at - self.started) * 1000, 1)
        return {
            "request_id": self.request_id,
            "model": self.model,
            "stream": self.stream,
            "status": self.status,
            "duration_ms": round((time.perf_counter() - self.started) * 1000, 1),
            "ttft_ms": ttft,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "upstream_error": self.upstream_error,
            "cut": self.cut,
        }


def _given_request_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            text = value.decode("latin-1")
            return text if _SANE_REQUEST_ID.fullmatch(text) else None
    return None


class ObserveMiddleware:
    """Pure ASGI middleware: a record per HTTP request, closed when the
    response has been sent (for a stream, after its last event)."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        server_config: Callable[[], ServerConfig],
        genai: GenAiTelemetry | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.server_config = server_config  # read per request: a reload changes it
        self.genai = genai

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _given_request_id(scope) or new_id("", 32)
        record = RequestRecord(self.metrics, rid)
        scope.setdefault("state", {})["record"] = record
        token = request_id.set(rid)
        wait_token = backend_wait.set(record.backend_wait)
        overhead_header = self.server_config().overhead_header

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._answered(scope, record, message["status"])
                headers = MutableHeaders(scope=message)
                headers.append(REQUEST_ID_HEADER, rid)
                if overhead_header:
                    headers.append(OVERHEAD_HEADER, f"{record.overhead(time.perf_counter()) * 1000:.3f}")
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                self._ended(scope, record)  # before the end goes out: a scrape after the response sees it
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:
            if record.status is None:
                self._answered(scope, record, 500)
            raise
        finally:
            request_id.reset(token)
            backend_wait.reset(wait_token)
            self._ended(scope, record)  # no-op if the response's end went out
            self._log(scope, record)

    def _answered(self, scope: Scope, record: RequestRecord, status: int) -> None:
        """The status is known: count the request (before its body goes out,
        so a scrape after the response always sees it)."""
        record.status = status
        self.metrics.requests.labels(record.label, str(status), self.metrics.route_label(scope["path"])).inc()

    def _ended(self, scope: Scope, record: RequestRecord) -> None:
        """A model's request is over: its overhead, and the GenAI telemetry (once)."""
        if record.model is None or record.ended:
            return
        record.ended = True
        now = time.perf_counter()
        self.metrics.overhead.labels(record.label).observe(record.overhead(now))
        if self.genai is not None:
            self.genai.request_ended(scope["path"], record, now)

    def _log(self, scope: Scope, record: RequestRecord) -> None:
        fields = record.fields()
        client = scope.get("client")
        fields.update(method=scope["method"], path=scope["path"], client=client[0] if client else None)
        access_log.info("%s %s %s", scope["method"], scope["path"], record.status, extra=fields)
