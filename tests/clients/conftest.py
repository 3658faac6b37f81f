"""Every test of this folder is a `clients` test: it drives the gateway with
a real client library or agent CLI (README.md's quick run leaves them out)."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.clients)
