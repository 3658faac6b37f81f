"""Fixtures of the gateway suites."""

from __future__ import annotations

import openai
import pytest


@pytest.fixture(scope="module")
def client(gateway_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="client-key", max_retries=0, timeout=10)
