"""The backends: one pooled client per configured model (transport.py),
retried over the backend's URLs within its time limits, the upstream
request body, and backend failures turned into OpenAI errors.

The URL always comes from config.yaml; nothing in a request can change it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from gateway.ops.config import ModelConfig
from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.forwarded_headers import forwarded_headers
from gateway.ops.observe import request_id_headers
from gateway.ops.overhead import awaiting_backend
from gateway.ops.secrets import Secrets, backend_secrets
from gateway.ops.servers import ServerKind
from gateway.plan.parse_plan import ParsePlan
from gateway.upstream.asked_once import AskedOnce
from gateway.upstream.balancer import Balancer, Endpoint, Route
from gateway.upstream.errors import ERROR_BODY_LIMIT, UpstreamErrors
from gateway.upstream.transport import Transport, TransportFailure, UpstreamResponse

DEMO_BASE_URL = "http://parsegate-demo.invalid/v1"
GATEWAY_ONLY_FIELDS = ("separate_reasoning", "stream_reasoning")
_RETRIED_STATUSES = (502, 503)

if TYPE_CHECKING:
    from gateway.upstream.load_gauges import LoadScraper


class _ConnectFailed(Exception):
    """No connection to the backend: safe to try again."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


class _InFlight:
    """A backend's requests in flight and whether it is retired, so that a
    reload closes the pool only after the last of them is done."""

    def __init__(self) -> None:
        self.opening = 0
        self.responses: dict[UpstreamResponse, Endpoint] = {}  # each with the URL that answers it
        self.retired = False

    @property
    def idle(self) -> bool:
        return not self.opening and not self.responses


class Backend:
    """One model entry's backend: where it lives, how to call it, its pooled
    client; made at start-up (and at each reload) and never changed after.
    `config` is the entry as configured; what holds for one request (a
    catch-all's pick, a detected server kind) is that request's `Serving`
    (serving.py), and the calls of a request take its model and errors."""

    def __init__(self, model: ModelConfig, secrets: Secrets | None = None) -> None:
        backend = model.backend
        self.config = model
        self.name = model.name
        self.balancer = Balancer(
            backend.base_urls or [DEMO_BASE_URL],
            threshold=backend.breaker_failures,
            cooldown=backend.breaker_cooldown,
            routing=backend.routing,
            overload=backend.overload_bound,
            overload_floor=backend.session_overload_floor,
        )
        self.secrets = secrets if secrets is not None else Secrets(backend_secrets(backend))
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if backend.api_key:
            self.headers["authorization"] = f"Bearer {backend.api_key}"
        self._in_flight = _InFlight()
        self.load_scraper: LoadScraper | None = None  # with `backend.load_gauges` over several URLs (backends.py)
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
            max_answer_bytes=backend.max_answer_bytes,
        )

    def body(
        self, payload: dict, model: ModelConfig, parsers_need_special_tokens: bool, replaced: dict | None = None
    ) -> bytes:
        """The client's request for the backend: our model name, gateway-only
        fields removed, the fields in `replaced` set (removed where None),
        everything else untouched. Special tokens are kept when the model's
        `keep_special_tokens` says so, else when the parsers need them; a
        request's own `skip_special_tokens` wins."""
        body = {key: value for key, value in payload.items() if key not in GATEWAY_ONLY_FIELDS}
        body.update(replaced or ())
        for key in [key for key, value in (replaced or {}).items() if value is None]:
            del body[key]
        body["model"] = model.upstream_model
        keep = model.keep_special_tokens
        if keep if keep is not None else parsers_need_special_tokens:
            body.setdefault("skip_special_tokens", False)
        return orjson.dumps(body)

    async def prepare(self, payload: dict, plan: ParsePlan, model: ModelConfig) -> tuple[bytes, ParsePlan]:
        """The upstream body for a chat payload, its plan and the model's
        settings, and the plan as the body leaves it (template mode learns
        from the rendered prompt)."""
        keeps = plan.keeps_special_tokens()
        return self.body(payload, model, parsers_need_special_tokens=keeps, replaced=plan.upstream), plan

    def read_chunk(self, data: bytes, errors: UpstreamErrors) -> object:
        """One streamed `data:` payload as a chat completion chunk; malformed
        JSON is a 502."""
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise errors.malformed_chunk() from None

    async def open(
        self,
        body: bytes | None,
        path: str = "/chat/completions",
        *,
        at_root: bool = False,
        errors: UpstreamErrors | None = None,
        route: Route | None = None,
    ) -> UpstreamResponse:
        """POST `body` (GET when None) to `path` under the backend's base URL
        (at its server root, beside `/v1`, with `at_root`) that serves
        `route` (a session's key, a URL it prefers: balancer.py; `route.served_by`
        is set to the URL that answers); return the
        still-streaming response once it is a success, its failures as
        `errors` says (the entry's own by default). Give it back with
        `release`."""
        self._in_flight.opening += 1
        try:
            with awaiting_backend():
                response, endpoint = await self._attempts(body, path, at_root, errors or self.errors_for(), route)
            self._in_flight.responses[response] = endpoint
            return response
        finally:
            self._in_flight.opening -= 1
            await self._close_if_retired()

    async def release(self, response: UpstreamResponse) -> None:
        """Close a response from `open` (again is harmless)."""
        response.close()
        endpoint = self._in_flight.responses.pop(response, None)
        if endpoint is not None:
            self.balancer.ended(endpoint)
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
        if self.load_scraper is not None:
            await self.load_scraper.stop()
        await self.client.aclose()

    async def _attempts(
        self, body: bytes | None, path: str, at_root: bool, errors: UpstreamErrors, route: Route | None
    ) -> tuple[UpstreamResponse, Endpoint]:
        """A failed connection, 502 or 503 is retried (`retries` times, on
        another URL while there is one): nothing has reached the client yet.
        A URL counts the request in flight from its attempt to `release`."""
        attempts = self.config.backend.retries + 1
        tried: list[Endpoint] = []
        if self.load_scraper is not None:
            await self.load_scraper.start()
        for attempt in range(1, attempts + 1):
            endpoint = (
                self.balancer.pick(route.session, tried, route.prefer) if route else self.balancer.pick(None, tried)
            )
            tried.append(endpoint)
            self.balancer.began(endpoint)
            answered = False
            try:
                try:
                    base = endpoint.url.removesuffix("/v1") if at_root else endpoint.url
                    response = await self._send(base + path, body, errors)
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
                    answered = True
                    if route is not None:
                        route.served_by = endpoint.url
                    return response, endpoint
                try:
                    content = await self.client.read(response, errors, ERROR_BODY_LIMIT)  # the rest is never read
                finally:
                    response.close()
                if response.status >= 500:
                    self.balancer.failed(endpoint)
                if response.status not in _RETRIED_STATUSES or attempt == attempts:
                    raise errors.http_error(response, content)
            finally:
                if not answered:
                    self.balancer.ended(endpoint)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send(self, url: str, body: bytes | None, errors: UpstreamErrors) -> UpstreamResponse:
        method = "GET" if body is None else "POST"
        try:
            headers = {**forwarded_headers(), **self.headers, **request_id_headers()}
            return await self.client.send(method, url, body, headers)
        except TransportFailure as failure:
            if failure.connect:
                raise _ConnectFailed(errors.transport_error(failure)) from None
            raise errors.transport_error(failure) from None

    async def read(self, response: UpstreamResponse, errors: UpstreamErrors | None = None) -> bytes:
        """A response's whole (decoded) body, at most `max_answer_bytes` long,
        each piece due within `idle_timeout` of the last."""
        with awaiting_backend():
            return await self.client.read(response, errors or self.errors_for())

    async def push_payloads(
        self,
        response: UpstreamResponse,
        deliver: Callable[[list[bytes]], asyncio.Future[None] | None],
        drain_seconds: float,
        errors: UpstreamErrors,
    ) -> None:
        """The `data:` payloads of a streamed response handed to `deliver` as
        they arrive, up to `[DONE]`, each piece due within `idle_timeout` of
        the last (transport.py, body_push.py). The body's time, less
        `deliver`'s, is the request's wait for its backend (ops/overhead.py)."""
        with awaiting_backend() as wait:
            await self.client.push_payloads(response, errors, deliver, drain_seconds, wait)

    async def complete(self, body: bytes, errors: UpstreamErrors, route: Route | None = None) -> dict:
        """Send a non-streamed request (on `route`) and return the backend's JSON answer."""
        response = await self.open(body, errors=errors, route=route)
        try:
            content = await self.read(response, errors)
        finally:
            await self.release(response)
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
            raise errors.invalid_answer()
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

    def errors_for(self, model: ModelConfig | None = None) -> UpstreamErrors:
        """The failures of a request for `model` (the entry by default) as
        the client's errors (errors.py)."""
        model = model or self.config
        return UpstreamErrors(model.name, model.backend.server, self.redact)

    def redact(self, text: str) -> str:
        """`text` with every configured secret masked."""
        return self.secrets.redact(text)
