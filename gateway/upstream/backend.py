"""The backends: one pooled client per configured model (transport.py),
retried over the backend's URLs within its time limits, the upstream
request body, and backend failures turned into OpenAI errors.

The URL always comes from config.yaml; nothing in a request can change it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable

import orjson

from gateway.ops.config import ModelConfig
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.observe import request_id_headers
from gateway.ops.secrets import Secrets, backend_secrets
from gateway.ops.servers import ServerKind
from gateway.plan.parse_plan import ParsePlan
from gateway.upstream.asked_once import AskedOnce
from gateway.upstream.balancer import Balancer
from gateway.upstream.errors import ERROR_BODY_LIMIT, UpstreamErrors
from gateway.upstream.transport import Transport, TransportFailure, UpstreamResponse

DEMO_BASE_URL = "http://parsegate-demo.invalid/v1"
GATEWAY_ONLY_FIELDS = ("separate_reasoning", "stream_reasoning")
_RETRIED_STATUSES = (502, 503)


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
        self.responses: set[UpstreamResponse] = set()
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
        self.server_kind: AskedOnce[ServerKind | None] = (
            AskedOnce()
        )  # detected when `backend.server` is unset (server_kind.py)
        self.template_parsers: AskedOnce = AskedOnce()  # derived from the server's template (derived_parsers.py)
        self.client = Transport(
            backend.connect_seconds,
            backend.timeout,
            backend.first_byte_seconds,
            backend.idle_seconds,
            demo=backend.demo,
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
            raise self.malformed_chunk() from None

    def malformed_chunk(self) -> ApiError:
        """The 502 for a streamed chunk that is not the JSON its dialect sends."""
        message = f"the backend for model {self.name!r} sent a malformed chunk"
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed")

    async def open(
        self, body: bytes | None, path: str = "/chat/completions", *, at_root: bool = False
    ) -> UpstreamResponse:
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

    async def release(self, response: UpstreamResponse) -> None:
        """Close a response from `open` (again is harmless)."""
        response.close()
        self._in_flight.responses.discard(response)
        await self._close_if_retired()

    async def retire(self) -> None:
        """No new requests will come (the config was reloaded): close the
        client once the requests in flight are done."""
        self._in_flight.retired = True
        await self._close_if_retired()

    async def _close_if_retired(self) -> None:
        if self._in_flight.retired and self._in_flight.idle and not self.client.is_closed:
            await self.close()

    async def close(self) -> None:
        """Close the pooled client (and whatever else the backend holds)."""
        await self.client.aclose()

    async def _attempts(self, body: bytes | None, path: str, at_root: bool) -> UpstreamResponse:
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
            if 200 <= response.status < 300:
                self.balancer.succeeded(endpoint)
                return response
            try:
                content = await self.client.read(response, self.errors, ERROR_BODY_LIMIT)  # the rest is never read
            finally:
                response.close()
            if response.status >= 500:
                self.balancer.failed(endpoint)
            if response.status not in _RETRIED_STATUSES or attempt == attempts:
                raise self.errors.http_error(response, content)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send(self, url: str, body: bytes | None) -> UpstreamResponse:
        method = "GET" if body is None else "POST"
        try:
            return await self.client.send(method, url, body, {**self.headers, **request_id_headers()})
        except TransportFailure as failure:
            if failure.connect:
                raise _ConnectFailed(self.transport_error(failure)) from None
            raise self.transport_error(failure) from None

    async def read(self, response: UpstreamResponse) -> bytes:
        """A response's whole (decoded) body, each piece due within `idle_timeout` of the last."""
        return await self.client.read(response, self.errors)

    async def push_payloads(
        self,
        response: UpstreamResponse,
        deliver: Callable[[list[bytes]], asyncio.Future[None] | None],
        drain_seconds: float,
    ) -> None:
        """The `data:` payloads of a streamed response handed to `deliver` as
        they arrive, up to `[DONE]`, each piece due within `idle_timeout` of
        the last (transport.py, body_push.py)."""
        await self.client.push_payloads(response, self.errors, deliver, drain_seconds)

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
            raise self.invalid_answer()
        return answer

    def invalid_answer(self) -> ApiError:
        """The 502 for a non-streamed answer that is not the completion its dialect sends."""
        message = f"the backend for model {self.name!r} sent an invalid response"
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_invalid_response")

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

    @property
    def errors(self) -> UpstreamErrors:
        """This backend's failures as the client's errors (errors.py)."""
        return UpstreamErrors(self.name, self.config.backend.server, self.redact)

    def transport_error(self, failure: TransportFailure) -> ApiError:
        return self.errors.transport_error(failure)

    def relayed_error(self, status: int, details: dict) -> ApiError:
        """An error the backend reported in its stream (`details`: its OpenAI
        error object), redacted and cut."""
        return self.errors.relayed_error(status, details)

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
