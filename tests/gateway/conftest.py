"""Fixtures of the gateway suites."""

from __future__ import annotations

import time

import openai
import pytest

from gateway.upstream import asked_once
from gateway.upstream.asked_once import FAILURE_KEPT_SECONDS
from tests.sdk_clients import openai_client


@pytest.fixture(scope="module")
def client(gateway_url: str) -> openai.OpenAI:
    return openai_client(gateway_url, api_key="client-key")


class FailureClock:
    """`time.monotonic()` for asked_once.py, whose failures are kept
    `FAILURE_KEPT_SECONDS`: still until the test moves it."""

    def __init__(self) -> None:
        self.start = self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def pass_the_window(self) -> None:
        """Past the window of a failure kept at `start`."""
        self.now = self.start + FAILURE_KEPT_SECONDS


@pytest.fixture
def failure_clock(monkeypatch: pytest.MonkeyPatch) -> FailureClock:
    """The clock of the failures kept of `/props` and the server-kind probe
    (asked_once.py), moved only by the test, on the served gateway's thread too."""
    clock = FailureClock()
    monkeypatch.setattr(asked_once, "time", clock)
    return clock
