"""The prompt tokens of a chat request, counted by the backend's own
tokenizer where its server kind (`backend.server`) offers one:

- `vllm`: `POST /tokenize` with the messages and tools; the server renders
  its chat template and counts (exact).
- `llamacpp`: `POST /apply-template` with the messages and tools, then
  `POST /tokenize` on the rendered prompt (exact).
- `sglang`: `POST /tokenize` on the messages' and tools' text, without the
  chat template (the model's real tokenizer; the template's few tokens
  are not counted).
- `other`, or a tokenizer that fails: an estimate of one token per four
  characters of that text (JSON included).

These endpoints sit at the server's root, beside its `/v1`.
"""

from __future__ import annotations

import logging
import math

import httpx
import orjson

from gateway.backend.upstream import Backend

logger = logging.getLogger("parsegate.tokens")
CHARS_PER_TOKEN = 4


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


async def count_prompt_tokens(backend: Backend, payload: dict) -> int:
    """The prompt tokens of `payload` (module docstring for how)."""
    kind = backend.config.backend.server
    if kind == "other" or backend.config.backend.demo:
        return estimate(payload)
    root = backend.balancer.pick().url.removesuffix("/v1")
    chat = {"model": backend.upstream_model, "messages": payload["messages"], "add_generation_prompt": True}
    if payload.get("tools"):
        chat["tools"] = payload["tools"]
    try:
        if kind == "vllm":
            return int((await _post(backend, f"{root}/tokenize", chat))["count"])
        if kind == "llamacpp":
            prompt = (await _post(backend, f"{root}/apply-template", chat))["prompt"]
            return len((await _post(backend, f"{root}/tokenize", {"content": prompt}))["tokens"])
        answer = await _post(
            backend, f"{root}/tokenize", {"model": backend.upstream_model, "prompt": prompt_text(payload)}
        )
        return int(answer["count"])
    except (httpx.HTTPError, KeyError, TypeError, ValueError) as error:
        logger.warning("count_tokens: the %s tokenizer of model %r failed (%s); estimating", kind, backend.name, error)
        return estimate(payload)


async def _post(backend: Backend, url: str, body: dict) -> dict:
    response = await backend.client.post(url, content=orjson.dumps(body), headers=backend.headers)
    response.raise_for_status()
    answer = orjson.loads(response.content)
    if not isinstance(answer, dict):
        raise ValueError("the tokenizer's answer is not a JSON object")
    return answer
