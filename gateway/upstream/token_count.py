"""The prompt tokens of a chat request, counted by the backend's own
tokenizer where its server kind (`backend.server`) offers one:

- `vllm`: `POST /tokenize` with the messages and tools; the server renders
  its chat template and counts (exact).
- `llamacpp`: `POST /apply-template` with the messages and tools, then
  `POST /tokenize` on the rendered prompt (exact).
- `sglang`: `POST /tokenize` on the messages' and tools' text, without the
  chat template (the model's real tokenizer; the template's few tokens
  are not counted).
- `other`, or a tokenizer that fails, answers late (the backend's
  first-byte and idle deadlines) or answers a count that is not a whole
  number from 0 to 2^53: an estimate of one token per four characters of
  that text (JSON included).

These endpoints sit at the server's root, beside its `/v1`, and are asked
as every call to the backend is (`Backend.fetch`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable

import orjson

from gateway.ops.errors import ApiError
from gateway.upstream.backend import Backend
from gateway.upstream.serving import Serving

logger = logging.getLogger("parsegate.tokens")
CHARS_PER_TOKEN = 4
MAX_COUNT = 2**53  # the largest count a JSON client reads exactly


def prompt_text(payload: dict) -> str:
    """The text of a chat request's messages and tools, as the model reads them."""
    parts: list[str] = []
    for message in payload["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
        for key in ("reasoning_content", "tool_calls"):
            if message.get(key):
                parts.append(message[key] if isinstance(message[key], str) else orjson.dumps(message[key]).decode())
    if payload.get("tools"):
        parts.append(orjson.dumps(payload["tools"]).decode())
    return "\n".join(parts)


def estimate(payload: dict) -> int:
    return math.ceil(len(prompt_text(payload)) / CHARS_PER_TOKEN)


def estimate_rendered(body: bytes) -> int:
    """The estimate for a template-mode body as sent upstream: its rendered
    `prompt`, the prompt exactly as the model reads it (a prompt of token
    ids is counted)."""
    prompt = orjson.loads(body).get("prompt")
    if isinstance(prompt, list):
        return len(prompt)
    return math.ceil(len(prompt) / CHARS_PER_TOKEN) if isinstance(prompt, str) else 0


async def count_prompt_tokens(serving: Serving, payload: dict) -> int:
    """The prompt tokens of `payload` (module docstring for how), on a
    `serving` that knows its server's kind."""
    backend, model = serving.backend, serving.model
    kind = model.backend.server_kind
    if kind == "other" or model.backend.demo:
        return estimate(payload)
    count = await _counted(serving, _tokenizer_count(backend, model.upstream_model, kind, payload), "count_tokens")
    return count if count is not None else estimate(payload)


async def _counted(serving: Serving, asking: Awaitable[object], purpose: str) -> int | None:
    """What the server's tokenizer answers, if it is a count; None (and a
    warning naming the count's `purpose`) when it fails or answers something else."""
    try:
        count = await asking
    except ApiError as error:
        problem = str(error)
    else:
        if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_COUNT:
            return count
        problem = f"an invalid count: {serving.backend.redact(repr(count))[:100]}"
    kind = serving.model.backend.server_kind
    logger.warning("%s: the %s tokenizer of model %r failed (%s); estimating", purpose, kind, serving.name, problem)
    return None


async def _tokenizer_count(backend: Backend, upstream_model: str, kind: str, payload: dict) -> object:
    """What the server's tokenizer counts (not yet checked)."""
    chat = {"model": upstream_model, "messages": payload["messages"], "add_generation_prompt": True}
    if payload.get("tools"):
        chat["tools"] = payload["tools"]
    if kind == "vllm":
        return _field(await backend.fetch("/tokenize", chat, at_root=True), "count")
    if kind == "llamacpp":
        prompt = _field(await backend.fetch("/apply-template", chat, at_root=True), "prompt")
        if not isinstance(prompt, str):
            return None
        tokens = _field(await backend.fetch("/tokenize", {"content": prompt}, at_root=True), "tokens")
        return len(tokens) if isinstance(tokens, list) else tokens
    sglang = {"model": upstream_model, "prompt": prompt_text(payload)}
    return _field(await backend.fetch("/tokenize", sglang, at_root=True), "count")


async def count_rendered_tokens(serving: Serving, body: bytes) -> int:
    """The tokens of a template-mode body's rendered `prompt`, counted by the
    server's tokenizer (`vllm`, `sglang`: `POST /tokenize` with the prompt;
    `llamacpp`: with it as `content`), on a `serving` that knows its
    server's kind; `estimate_rendered` where there is none or it fails."""
    backend, model = serving.backend, serving.model
    kind = model.backend.server_kind
    prompt = orjson.loads(body).get("prompt")
    if kind == "other" or model.backend.demo or not isinstance(prompt, str):
        return estimate_rendered(body)
    count = await _counted(serving, _prompt_count(backend, model.upstream_model, kind, prompt), "message_start")
    return count if count is not None else estimate_rendered(body)


async def _prompt_count(backend: Backend, upstream_model: str, kind: str, prompt: str) -> object:
    """What the server's tokenizer counts of a rendered prompt (not yet checked)."""
    if kind == "llamacpp":
        tokens = _field(await backend.fetch("/tokenize", {"content": prompt}, at_root=True), "tokens")
        return len(tokens) if isinstance(tokens, list) else tokens
    # the prompt already holds the template's special tokens: none added again
    asked = {"model": upstream_model, "prompt": prompt, "add_special_tokens": False}
    return _field(await backend.fetch("/tokenize", asked, at_root=True), "count")


def _field(answer: object, key: str) -> object:
    return answer.get(key) if isinstance(answer, dict) else None
