"""The backends: one pooled `httpx.AsyncClient` per configured model, the
upstream request body, and backend failures turned into OpenAI errors.

The URL always comes from config.yaml; nothing in a request can change it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import orjson

from gateway.config import Config, ModelConfig
from gateway.demo_backend import DemoTransport
from gateway.errors import UPSTREAM_ERROR, ApiError
from gateway.observe import request_id_headers

DEMO_BASE_URL = "http://parsegate-demo.invalid/v1"
GATEWAY_ONLY_FIELDS = ("separate_reasoning", "stream_reasoning")
_ERROR_TEXT_LIMIT = 500


class Backend:
    """One model's backend: where it lives, how to call it, its pooled client."""

    def __init__(self, model: ModelConfig) -> None:
        backend = model.backend
        self.config = model
        self.name = model.name
        self.upstream_model = model.upstream_model
        self.url = f"{backend.url or DEMO_BASE_URL}/chat/completions"
        self._secret = backend.api_key
        self._headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if backend.api_key:
            self._headers["authorization"] = f"Bearer {backend.api_key}"
        self.client = httpx.AsyncClient(
            transport=DemoTransport() if backend.demo else None,
            timeout=httpx.Timeout(backend.timeout, connect=min(backend.timeout, 10.0)),
            limits=httpx.Limits(max_connections=4096, max_keepalive_connections=512),
        )

    def body(self, payload: dict, keep_special_tokens: bool) -> bytes:
        """The client's request for the backend: our model name, gateway-only
        fields removed, everything else untouched."""
        body = {key: value for key, value in payload.items() if key not in GATEWAY_ONLY_FIELDS}
        body["model"] = self.upstream_model
        if keep_special_tokens:
            body.setdefault("skip_special_tokens", False)
        return orjson.dumps(body)

    async def open(self, body: bytes) -> httpx.Response:
        """Send `body`; return the still-streaming response once it is a success."""
        headers = {**self._headers, **request_id_headers()}
        request = self.client.build_request("POST", self.url, content=body, headers=headers)
        with self.transport_errors():
            response = await self.client.send(request, stream=True)
        if response.is_success:
            return response
        try:
            with self.transport_errors():
                await response.aread()
        finally:
            await response.aclose()
        raise self._http_error(response)

    async def complete(self, body: bytes) -> dict:
        """Send a non-streamed request and return the backend's JSON answer."""
        response = await self.open(body)
        try:
            with self.transport_errors():
                content = await response.aread()
        finally:
            await response.aclose()
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
            message = f"the backend for model {self.name!r} sent an invalid response"
            raise ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_invalid_response")
        return answer

    @contextmanager
    def transport_errors(self) -> Iterator[None]:
        """Turn httpx connection failures into 502, timeouts into 504."""
        try:
            yield
        except httpx.TimeoutException as error:
            raise ApiError(504, self.failure_message(error), type=UPSTREAM_ERROR, code="upstream_timeout") from None
        except httpx.TransportError as error:
            raise ApiError(502, self.failure_message(error), type=UPSTREAM_ERROR, code="upstream_unreachable") from None

    def failure_message(self, error: httpx.TransportError) -> str:
        if isinstance(error, httpx.TimeoutException):
            what = "timed out"
        elif isinstance(error, httpx.ConnectError):
            what = "is unreachable"
        else:
            what = "connection failed"
        detail = self._redact(str(error)) or type(error).__name__
        return f"the backend for model {self.name!r} {what}: {detail}"

    def _http_error(self, response: httpx.Response) -> ApiError:
        """The backend's error status, with its OpenAI error details if it sent them."""
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            data = None
        details = data.get("error", data) if isinstance(data, dict) else None
        if isinstance(details, str):
            details = {"message": details}
        if not isinstance(details, dict) or not isinstance(details.get("message"), str):
            details = {"message": response.text[:_ERROR_TEXT_LIMIT] or response.reason_phrase}
        param, code = details.get("param"), details.get("code")
        return ApiError(
            response.status_code if response.status_code >= 400 else 502,
            self._redact(details["message"]),
            type=details.get("type") if isinstance(details.get("type"), str) else UPSTREAM_ERROR,
            param=param if isinstance(param, str) else None,
            code=None if code is None else str(code),
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def open_backends(config: Config) -> dict[str, Backend]:
    """A backend per served model name."""
    return {model.name: Backend(model) for model in config.models}


async def close_backends(backends: dict[str, Backend]) -> None:
    for backend in backends.values():
        await backend.client.aclose()
