"""A backend's failures as the client's errors: its error statuses relayed
with their OpenAI error details (every field redacted, then cut), its 500
as a 502 (a 500 is the gateway's own fault), its credentials refusal as
the operator's problem, and a connection that failed or timed out
(transport.py) as a 502 or 504 saying what happened in words, its detail
(the client library's text, the URL) logged with the request id.

An error body is read up to `ERROR_BODY_LIMIT` bytes; `Retry-After` is
passed on with a 429 or 503 when it is seconds or an HTTP date (RFC 9110
section 10.2.3).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import orjson

from gateway.ops.errors import UPSTREAM_ERROR, ApiError
from gateway.ops.observe import request_id
from gateway.ops.servers import VLLM_REFUSES_AUTO_TOOL_CHOICE
from gateway.upstream.sse_reader import MAX_LINE_BYTES
from gateway.upstream.transport import TransportFailure, UpstreamResponse

log = logging.getLogger("parsegate.backend")

ERROR_BODY_LIMIT = 64 << 10  # bytes of a backend's error body read; the rest is dropped
_ERROR_TEXT_LIMIT = 500  # characters of a relayed error message
_FIELD_LIMIT = 100  # characters of a relayed error's type, param and code
_CREDENTIAL_STATUSES = (401, 403)
_RETRY_AFTER_STATUSES = (429, 503)
_RETRY_AFTER = re.compile(
    r"\d{1,9}|[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT"
)  # seconds or an HTTP date


class UpstreamErrors:
    """The errors of one model's backend: `model` names it in every message,
    `redact` masks the configured secrets, `server` is its backend.server."""

    def __init__(self, model: str, server: str | None, redact: Callable[[str], str]) -> None:
        self.model = model
        self.server = server
        self.redact = redact

    def transport_error(self, failure: TransportFailure) -> ApiError:
        """A failed connection as a 502, a timeout as a 504, said in words:
        the detail (aiohttp's text, the URL) goes to the log with the
        request id, never to the client."""
        message = f"the backend for model {self.model!r} {failure.words}"
        log.warning("%s (request %s): %s", message, request_id.get() or "-", self.redact(str(failure)))
        if failure.timed_out:
            return ApiError(504, message, type=UPSTREAM_ERROR, code="upstream_timeout")
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_unreachable")

    def line_too_long(self) -> ApiError:
        return ApiError(
            502,
            f"the backend for model {self.model!r} sent an event line over {MAX_LINE_BYTES} bytes",
            type=UPSTREAM_ERROR,
            code="upstream_malformed",
        )

    def answer_too_large(self, limit: int) -> ApiError:
        """The 502 for a whole answer (or `GET /props`, a listing) longer, decoded, than `limit`."""
        message = (
            f"the backend for model {self.model!r} sent an answer over {limit} bytes "
            "(its backend.max_answer_bytes); the rest was not read"
        )
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_too_large")

    def malformed_chunk(self) -> ApiError:
        """The 502 for a streamed chunk that is not the JSON its dialect sends."""
        message = f"the backend for model {self.model!r} sent a malformed chunk"
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_malformed")

    def invalid_answer(self) -> ApiError:
        """The 502 for a non-streamed answer that is not the completion its dialect sends."""
        message = f"the backend for model {self.model!r} sent an invalid response"
        return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_invalid_response")

    def http_error(self, response: UpstreamResponse, content: bytes) -> ApiError:
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
            details = {"message": content.decode(errors="replace") or response.reason}
        status = response.status
        if status in _CREDENTIAL_STATUSES:  # the operator's backend key, not the client's: never a 401 to the client
            message = (
                f"the backend for model {self.model!r} refused the gateway's credentials (HTTP {status}); "
                "check that model's backend.api_key"
            )
            return ApiError(502, message, type=UPSTREAM_ERROR, code="upstream_auth_failed")
        if status == 400 and VLLM_REFUSES_AUTO_TOOL_CHOICE in details["message"]:
            return self._vllm_refused_auto_tool_choice()
        error = self.relayed_error(_client_status(status), details)
        error.backend_status = status
        retry_after = response.headers.get("retry-after", "")
        if status in _RETRY_AFTER_STATUSES and _RETRY_AFTER.fullmatch(retry_after):
            error.headers["Retry-After"] = retry_after
        return error

    def _vllm_refused_auto_tool_choice(self) -> ApiError:
        """vLLM's 400 for tool_choice "auto" tells the user to turn vLLM's own
        tool parser on, the opposite of what parsegate needs: a 502 naming
        the config key that fixes it instead."""
        refused = f'the backend for model {self.model!r} is a vLLM without a tool parser: it refused tool_choice "auto"'
        if self.server != "vllm":
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
            message = f"the backend for model {self.model!r} reported an error"
        return ApiError(
            status,
            message[:_ERROR_TEXT_LIMIT],
            type=kind[:_FIELD_LIMIT] if isinstance(kind, str) else UPSTREAM_ERROR,
            param=param[:_FIELD_LIMIT] if isinstance(param, str) else None,
            code=None if code is None else self.redact(str(code))[:_FIELD_LIMIT],
        )


def _client_status(status: int) -> int:
    """The status a backend's error answers the client with: its own, but
    a 500, which from the gateway says the gateway failed, is a 502 (Bad
    Gateway, RFC 9110 section 15.6.3), and so is a success status that
    came with an error."""
    return status if status >= 400 and status != 500 else 502
