"""The backends: one pooled `httpx.AsyncClient` per configured model, the
upstream request body, and backend failures turned into OpenAI errors.

The URL always comes from config.yaml; nothing in a request can change it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx
import orjson

from gateway.backend.balancer import Balancer
from gateway.backend.demo_backend import DemoTransport
from gateway.backend.idle import IdleExpired, within_idle
from gateway.backend.once import Once
from gateway.backend.parse_plan import ParsePlan
from gateway.backend.sse_reader import MAX_LINE_BYTES, LineTooLong, data_payloads
from gateway.ops.config import ModelConfig
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.observe import request_id_headers
from gateway.ops.secrets import Secrets, backend_secrets
from gateway.ops.servers import VLLM_REFUSES_AUTO_TOOL_CHOICE, ServerKind

DEMO_BASE_URL = "http://parsegate-demo.invalid/v1"
GATEWAY_ONLY_FIELDS = ("separate_reasoning", "stream_reasoning")
_ERROR_TEXT_LIMIT = 500  # characters of a relayed error message
_FIELD_LIMIT = 100  # characters of a relayed error's type, param and code
ERROR_BODY_LIMIT = 64 << 10  # bytes of a backend's error body read; the rest is dropped


_RETRIED_STATUSES = (502, 503)
_CREDENTIAL_STATUSES = (401, 403)
_RETRY_AFTER_STATUSES = (429, 503)
_RETRY_AFTER = re.compile(
    r"\d{1,9}|[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT"
)  # seconds or an HTTP date


class _ConnectFailed(Exception):
    """No connection to the backend: safe to try again."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


class _InFlight:
    """A backend's requests in flight and whether it is retired: one object
    shared by the backend and every per-request `routed` view of it, so a
    reload closes the pool only after the last of them is done."""

    def __init__(self) -> None:
        self.opening = 0
        self.responses: set[httpx.Response] = set()
        self.retired = False

    @property
    def idle(self) -> bool:
        return not self.opening and not self.responses


class Backend:
    """One model's backend: where it lives, how to call it, its pooled client."""

    def __init__(self, model: ModelConfig, secrets: Secrets | None = None) -> None:
        backend = model.backend
        self.config = model
        self.name = model.name
        self.upstream_model = model.upstream_model
        self.balancer = Balancer(
            backend.base_urls or [DEMO_BASE_URL],
            threshold=backend.breaker_failures,
            cooldown=backend.breaker_cooldown,
        )
        self.secrets = secrets if secrets is not None else Secrets(backend_secrets(backend))
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if backend.api_key:
            self.headers["authorization"] = f"Bearer {backend.api_key}"
        self._in_flight = _InFlight()
        self.server_kind: Once[ServerKind | None] = Once()  # detected when `backend.server` is unset (server_kind.py)
        self.template_parsers: Once = Once()  # derived from the server's template (derived_parsers.py)
        self.client = httpx.AsyncClient(
            transport=DemoTransport() if backend.demo else None,
            timeout=httpx.Timeout(backend.timeout, connect=backend.connect_seconds, read=None),
            limits=httpx.Limits(max_connections=4096, max_keepalive_connections=512),
        )

    def body(self, payload: dict, parsers_need_special_tokens: bool, replaced: dict | None = None) -> bytes:
        """The client's request for the backend: our model name, gateway-only
        fields removed, the fields in `replaced` set, everything else
        untouched. Special tokens are kept when the model's
        `keep_special_tokens` says so, else when the parsers need them; a
        request's own `skip_special_tokens` wins."""
        body = {key: value for key, value in payload.items() if key not in GATEWAY_ONLY_FIELDS}
        body.update(replaced or ())
        body["model"] = self.upstream_model
        keep = self.config.keep_special_tokens
        if keep if keep is not None else parsers_need_special_tokens:
            body.setdefault("skip_special_tokens", False)
        return orjson.dumps(body)

    async def prepare(self, payload: dict, plan: ParsePlan) -> tuple[bytes, ParsePlan]:
        """The upstream body for a chat payload and its plan, and the plan as
        the body leaves it (template mode learns from the rendered prompt)."""
        return self.body(payload, parsers_need_special_tokens=plan.keeps_special_tokens(), replaced=plan.upstream), plan

    def read_chunk(self, data: bytes) -> object:
        """One streamed `data:` payload as a chat completion chunk; malformed
        JSON is a 502."""
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            message = f"the backend for model {self.name!r} sent a malformed chunk"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed") from None

    async def open(
        self, body: bytes | None, path: str = "/chat/completions", *, at_root: bool = False
    ) -> httpx.Response:
        """POST `body` (GET when None) to `path` under the backend's base URL
        (at its server root, beside `/v1`, with `at_root`); return the
        still-streaming response once it is a success. Give it back with
        `release`."""
        self._in_flight.opening += 1
        try:
            response = await self._attempts(body, path, at_root)
            self._in_flight.responses.add(response)
            return response
        finally:
            self._in_flight.opening -= 1
            await self._close_if_retired()

    async def release(self, response: httpx.Response) -> None:
        """Close a response from `open` (again is harmless)."""
        await response.aclose()
        self._in_flight.responses.discard(response)
        await self._close_if_retired()

    async def retire(self) -> None:
        """No new requests will come (the config was reloaded): close the
        client once the requests in flight are done."""
        self._in_flight.retired = True
        await self._close_if_retired()

    async def _close_if_retired(self) -> None:
        if self._in_flight.retired and self._in_flight.idle and not self.client.is_closed:
            await self.client.aclose()

    async def _attempts(self, body: bytes | None, path: str, at_root: bool) -> httpx.Response:
        """A failed connection, 502 or 503 is retried (`retries` times, on the
        next URL in turn): nothing has reached the client yet."""
        attempts = self.config.backend.retries + 1
        for attempt in range(1, attempts + 1):
            endpoint = self.balancer.pick()
            try:
                base = endpoint.url.removesuffix("/v1") if at_root else endpoint.url
                response = await self._send(base + path, body)
            except _ConnectFailed as failed:
                self.balancer.failed(endpoint)
                if attempt == attempts:
                    raise failed.error from None
                continue
            except ApiError:  # a timeout or a broken connection: the request may have been processed
                self.balancer.failed(endpoint)
                raise
            if response.is_success:
                self.balancer.succeeded(endpoint)
                return response
            try:
                content = await self._read_error_body(response)
            finally:
                await response.aclose()
            if response.status_code >= 500:
                self.balancer.failed(endpoint)
            if response.status_code not in _RETRIED_STATUSES or attempt == attempts:
                raise self._http_error(response, content)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send(self, url: str, body: bytes | None) -> httpx.Response:
        method = "GET" if body is None else "POST"
        request = self.client.build_request(method, url, content=body, headers={**self.headers, **request_id_headers()})
        async with self._within(self.config.backend.first_byte_seconds, "sent no response"):
            try:
                return await self.client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                raise _ConnectFailed(self.transport_error(error)) from None
            except httpx.TransportError as error:
                raise self.transport_error(error) from None

    async def read(self, response: httpx.Response) -> bytes:
        """A response's whole (decoded) body, due within `idle_timeout`."""
        async with self._within(self.config.backend.idle_seconds, "stopped sending"):
            with self.transport_errors():
                return await response.aread()

    async def _read_error_body(self, response: httpx.Response) -> bytes:
        """The first `ERROR_BODY_LIMIT` bytes of an error response (decoded);
        the rest is never read."""
        pieces: list[bytes] = []
        size = 0
        async for piece in self.pieces(response):
            pieces.append(piece)
            size += len(piece)
            if size >= ERROR_BODY_LIMIT:
                break
        return b"".join(pieces)[:ERROR_BODY_LIMIT]

    def payloads(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """The `data:` payloads of a streamed response, each due within
        `idle_timeout` of the last."""
        return self._within_idle(data_payloads(response))

    def pieces(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """A streamed response's body as it comes, decoded (no gzip left),
        each piece due within `idle_timeout` of the last."""
        return self._within_idle(response.aiter_bytes())

    async def _within_idle(self, items: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """`items`; a backend that stops sending for `idle_timeout` is a 504,
        a failed connection a 502."""
        seconds = self.config.backend.idle_seconds
        try:
            with self.transport_errors():
                async for item in within_idle(items, seconds):
                    yield item
        except IdleExpired:
            message = f"the backend for model {self.name!r} timed out: stopped sending for {seconds:g} s"
            raise ApiError(504, message, type=UPSTREAM_ERROR, code="upstream_timeout") from None
        except LineTooLong:
            message = f"the backend for model {self.name!r} sent an event line over {MAX_LINE_BYTES} bytes"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed") from None

    @asynccontextmanager
    async def _within(self, seconds: float, what: str) -> AsyncIterator[None]:
        """504 if the block takes longer than `seconds`."""
        try:
            with anyio.fail_after(seconds):
                yield
        except TimeoutError:
            message = f"the backend for model {self.name!r} timed out: {what} for {seconds:g} s"
            raise ApiError(504, message, type=UPSTREAM_ERROR, code="upstream_timeout") from None

    async def complete(self, body: bytes) -> dict:
        """Send a non-streamed request and return the backend's JSON answer."""
        response = await self.open(body)
        try:
            content = await self.read(response)
        finally:
            await self.release(response)
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
            message = f"the backend for model {self.name!r} sent an invalid response"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_invalid_response")
        return answer

    async def fetch(self, path: str, body: dict | None = None, *, at_root: bool = False) -> object:
        """The JSON answer to a call that is not a generation (`GET /props`,
        `GET /v1/models`, a tokenizer's `POST /tokenize`): POST `body` (GET
        when None) to `path` as `open` does, so with the backend's headers,
        URLs and deadlines, and its failures as the same redacted 502/504."""
        response = await self.open(None if body is None else orjson.dumps(body), path, at_root=at_root)
        try:
            content = await self.read(response)
        finally:
            await self.release(response)
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            message = f"the backend for model {self.name!r} sent malformed JSON at {path}"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed") from None

    @contextmanager
    def transport_errors(self) -> Iterator[None]:
        """Turn httpx connection failures into 502, timeouts into 504."""
        try:
            yield
        except httpx.TransportError as error:
            raise self.transport_error(error) from None

    def transport_error(self, error: httpx.TransportError) -> ApiError:
        if isinstance(error, httpx.TimeoutException):
            return ApiError(504, self.failure_message(error), type=UPSTREAM_ERROR, code="upstream_timeout")
        return ApiError(502, self.failure_message(error), type=UPSTREAM_ERROR, code="upstream_unreachable")

    def failure_message(self, error: httpx.TransportError) -> str:
        if isinstance(error, httpx.TimeoutException):
            what = "timed out"
        elif isinstance(error, httpx.ConnectError):
            what = "is unreachable"
        else:
            what = "connection failed"
        detail = self.redact(str(error)) or type(error).__name__
        return f"the backend for model {self.name!r} {what}: {detail}"

    def _http_error(self, response: httpx.Response, content: bytes) -> ApiError:
        """The backend's error status, with its OpenAI error details if it
        sent them; `content` is the start of its body."""
        try:
            data = orjson.loads(content)
        except orjson.JSONDecodeError:
            data = None
        details = data.get("error", data) if isinstance(data, dict) else None
        if isinstance(details, str):
            details = {"message": details}
        if not isinstance(details, dict) or not isinstance(details.get("message"), str):
            details = {"message": content.decode(errors="replace") or response.reason_phrase}
        status = response.status_code
        if status in _CREDENTIAL_STATUSES:  # the operator's backend key, not the client's: never a 401 to the client
            message = (
                f"the backend for model {self.name!r} refused the gateway's credentials (HTTP {status}); "
                "check that model's backend.api_key"
            )
            return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_auth_failed")
        if status == 400 and VLLM_REFUSES_AUTO_TOOL_CHOICE in details["message"]:
            return self._vllm_refused_auto_tool_choice()
        error = self.relayed_error(status if status >= 400 else 502, details)
        retry_after = response.headers.get("retry-after", "")
        if status in _RETRY_AFTER_STATUSES and _RETRY_AFTER.fullmatch(retry_after):
            error.headers["Retry-After"] = retry_after
        return error

    def _vllm_refused_auto_tool_choice(self) -> ApiError:
        """vLLM's 400 for tool_choice "auto" tells the user to turn vLLM's own
        tool parser on, the opposite of what parsegate needs: a 502 naming
        the config key that fixes it instead."""
        refused = f'the backend for model {self.name!r} is a vLLM without a tool parser: it refused tool_choice "auto"'
        if self.config.backend.server != "vllm":
            fix = (
                "set backend.server: vllm for that model, so that parsegate sends it "
                'tool_choice "none" and parses the tool calls itself'
            )
        else:  # a model with no tool_call_parser sends the request's choice as it came
            fix = "name that model's tool_call_parser, or start vLLM with --enable-auto-tool-choice --tool-call-parser"
        return ApiError(502, f"{refused}; {fix}", type=UPSTREAM_ERROR, code="upstream_misconfigured")

    def relayed_error(self, status: int, details: dict) -> ApiError:
        """An error the backend reported (`details`: its OpenAI error object),
        as an ApiError for the client: every field redacted first, then cut."""
        fields = {key: self.redact(value) if isinstance(value, str) else value for key, value in details.items()}
        message, kind, param, code = (fields.get(key) for key in ("message", "type", "param", "code"))
        if not isinstance(message, str):
            message = f"the backend for model {self.name!r} reported an error"
        return ApiError(
            status,
            message[:_ERROR_TEXT_LIMIT],
            type=kind[:_FIELD_LIMIT] if isinstance(kind, str) else UPSTREAM_ERROR,
            param=param[:_FIELD_LIMIT] if isinstance(param, str) else None,
            code=None if code is None else self.redact(str(code))[:_FIELD_LIMIT],
        )

    def routed(self, model: ModelConfig) -> Backend:
        """This backend serving `model` (a catch-all entry's pick for one
        request): same server, pooled client, balancer and in-flight count
        (shared, not copied), that model's name and parsers."""
        view = copy.copy(self)
        view.config, view.name, view.upstream_model = model, model.name, model.upstream_model
        return view

    def redact(self, text: str) -> str:
        """`text` with every configured secret masked."""
        return self.secrets.redact(text)
