"""A model's `extra_body`: fields the config adds to every upstream request.

The request wins: `extra_body` fills in what the client did not send, and a
mapping on both sides (say `chat_template_kwargs`) is merged key by key, the
client's keys winning again. So a config can set backend defaults (`top_k`,
`chat_template_kwargs: {enable_thinking: false}`) that a client may still
override per request.
"""

from __future__ import annotations

from typing import Any

OWNED_BY_GATEWAY = ("model", "messages", "prompt", "stream")


def with_extra_body(payload: dict[str, Any], extra_body: dict[str, Any]) -> dict[str, Any]:
    """`payload` with `extra_body` merged under it (the payload is not changed)."""
    if not extra_body:
        return payload
    merged = dict(extra_body)
    for key, value in payload.items():
        default = merged.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            merged[key] = with_extra_body(value, default)
        else:
            merged[key] = value
    return merged
