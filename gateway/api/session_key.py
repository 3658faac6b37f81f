"""A request's session key, which keeps a session's turns on the backend URL
that holds its prefix in cache (upstream/balancer.py). The first found of:

- a session header the agent sends (`backend.session_headers`: Claude
  Code's `x-claude-code-session-id`, Codex's `session_id`, ...);
- the request's `prompt_cache_key` (OpenAI's name for the same idea:
  https://platform.openai.com/docs/guides/prompt-caching), then its `user`;
- a hash of the system prompt and the first user message of the internal
  chat request. A Responses request continuing `previous_response_id` or a
  `conversation` carries its stored history there, so its key is the one
  its chain's first turn was routed by.

Only worked out when the backend has several URLs.
"""

from __future__ import annotations

from collections.abc import Mapping
from hashlib import blake2b

import orjson

_KEY_FIELDS = ("prompt_cache_key", "user")
_SYSTEM_ROLES = ("system", "developer")


def session_key(headers: Mapping[str, str], asked: Mapping, payload: Mapping, header_names: list[str]) -> str | None:
    """The session key of a request with `headers` and its surface's body
    `asked`, whose internal chat request is `payload`; None when it has none."""
    for name in header_names:
        value = headers.get(name)
        if value:
            return f"header:{value}"
    for name in _KEY_FIELDS:
        value = asked.get(name)
        if isinstance(value, str) and value:
            return f"{name}:{value}"
    return _opening_hash(payload.get("messages"))


def _opening_hash(messages: object) -> str | None:
    """A hash of the first system message and the first user message."""
    if not isinstance(messages, list):
        return None
    system = next((message for message in messages if _role(message) in _SYSTEM_ROLES), None)
    user = next((message for message in messages if _role(message) == "user"), None)
    if system is None and user is None:
        return None
    try:
        opening = orjson.dumps([_content(system), _content(user)])
    except orjson.JSONEncodeError:  # an integer past 64 bits: no key
        return None
    return "opening:" + blake2b(opening, digest_size=16).hexdigest()


def _role(message: object) -> object:
    return message.get("role") if isinstance(message, dict) else None


def _content(message: dict | None) -> object:
    return None if message is None else message.get("content")
