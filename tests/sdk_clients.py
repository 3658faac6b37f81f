"""The official OpenAI and Anthropic SDK clients on a gateway under test,
built the same way everywhere: a placeholder key (most test gateways check
none), no retries (the SDKs retry a 429, a 5xx or a dropped connection,
which would hide the answer a test asserts on) and a 10 s timeout (a hung
request fails its test rather than the run). A test that needs another
key, timeout or default headers passes it as a keyword, which replaces
the default. Both take the gateway's root URL: the OpenAI SDK's base URL
carries the `/v1` prefix (https://github.com/openai/openai-python#usage),
the Anthropic SDK adds it to each path itself
(https://github.com/anthropics/anthropic-sdk-python#usage).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai

_DEFAULTS: dict[str, Any] = {"api_key": "unused", "max_retries": 0, "timeout": 10}


def openai_client(gateway_url: str, **overrides: Any) -> openai.OpenAI:
    """An `openai.OpenAI` on the gateway at `gateway_url` (its root)."""
    return openai.OpenAI(base_url=f"{gateway_url}/v1", **{**_DEFAULTS, **overrides})


def anthropic_client(gateway_url: str, **overrides: Any) -> anthropic.Anthropic:
    """An `anthropic.Anthropic` on the gateway at `gateway_url` (its root)."""
    return anthropic.Anthropic(base_url=gateway_url, **{**_DEFAULTS, **overrides})
