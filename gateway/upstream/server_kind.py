"""The kind of server behind a model whose `backend.server` is unset, asked
of the server itself on the first request that depends on it (a request
with tools, template mode, count_tokens), not at start-up, when a sidecar's
server may still be loading:

- `GET /v1/models`: vLLM lists each model with `owned_by: "vllm"`
  (vllm/entrypoints/openai/protocol.py, ModelCard), SGLang with `"sglang"`
  (sglang/srt/entrypoints/openai/protocol.py), llama.cpp's server with
  `"llamacpp"` (tools/server/server-context.cpp);
- else `GET /props`, which only llama.cpp's server answers, with
  `default_generation_settings` and `build_info`.

A server that answers neither as one of these is `other`. A server that
cannot be asked now (unreachable, no answer within the first-byte
deadline, a 5xx such as llama.cpp's 503 while loading) is `other` for a
few seconds (asked_once.py), then asked again. What was found is logged once
per backend.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.ops.config import ModelConfig
from gateway.ops.errors import ApiError
from gateway.ops.servers import ServerKind
from gateway.upstream.backend import Backend

logger = logging.getLogger("parsegate.backend")
OWNERS: dict[object, ServerKind] = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp"}
LLAMACPP_PROPS = ("default_generation_settings", "build_info")


async def with_server_kind(backend: Backend, model: ModelConfig) -> ModelConfig:
    """`model`, an entry of `backend`'s whose `backend.server` is unset, as
    its server's kind serves it: with the detected kind, `other` while none
    can be found."""
    kind = await backend.server_kind.get(lambda: _detect(backend))
    return model.with_server(kind or "other")


async def _detect(backend: Backend) -> ServerKind | None:
    """The server's kind, or None when it cannot tell now (within the
    first-byte deadline)."""
    seconds = backend.config.backend.first_byte_seconds
    kind: ServerKind | None = None
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            kind = await _ask(backend)
    except ApiError as error:
        _cannot_tell(backend, str(error))
        return None
    except TimeoutError:
        if not timer.expired():
            raise
    if kind is None:  # cut off at the deadline
        _cannot_tell(backend, f"no answer within {seconds:g} s")
        return None
    found = "model %r: the backend at %s is a %r server (detected; backend.server is unset)"
    logger.info(found, backend.name, _urls(backend), kind)
    return kind


def _cannot_tell(backend: Backend, why: str) -> None:
    logger.info(
        "model %r: cannot tell the server kind at %s yet (%s); using 'other'", backend.name, _urls(backend), why
    )


def _urls(backend: Backend) -> str:
    return ", ".join(backend.redact(endpoint.url) for endpoint in backend.balancer.endpoints)


async def _ask(backend: Backend) -> ServerKind:
    try:
        listing = await backend.fetch("/models")
    except ApiError as error:
        _unless_refused(error)
        listing = None
    models = listing.get("data") if isinstance(listing, dict) else None
    owners = {model.get("owned_by") for model in models if isinstance(model, dict)} if isinstance(models, list) else ()
    for owner in owners:
        if owner in OWNERS:
            return OWNERS[owner]
    try:
        props = await backend.fetch("/props", at_root=True)
    except ApiError as error:
        _unless_refused(error)
        return "other"
    return "llamacpp" if isinstance(props, dict) and any(key in props for key in LLAMACPP_PROPS) else "other"


def _unless_refused(error: ApiError) -> None:
    """A 4xx (no such route) is a definite "not this one"; anything else
    (unreachable, timed out, a 429 or 5xx) means the server cannot be asked now."""
    if not 400 <= error.status < 500 or error.status == 429:
        raise error
