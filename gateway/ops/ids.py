"""Every id parsegate makes: a prefix that says what it names, then random
hex digits from `secrets` (OpenAI's `chatcmpl-`, `call_`, `resp_`…,
Anthropic's `msg_`, `toolu_`, and the request ids of the logs)."""

from __future__ import annotations

import secrets

UNGUESSABLE = 48  # digits (192 bits) of a stored object's id, which is all it takes to read it without keys


def new_id(prefix: str, digits: int = 24) -> str:
    """`prefix` and `digits` random hex digits (an even number)."""
    return prefix + secrets.token_hex(digits // 2)
