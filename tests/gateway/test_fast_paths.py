"""The fast paths' start-up check (gateway/upstream/fast_paths.py): the
installed aiohttp and Python have the internals the fast paths use, so the
gateway runs them (a release that drops them is caught here: the gateway
then takes the fallbacks, correct but slower); `PARSEGATE_FAST_PATHS=0`
turns them off, and the start-up line says which paths run."""

from __future__ import annotations

import os
import subprocess
import sys

from gateway.upstream import fast_paths
from tests.conftest import REPO


def test_the_installed_aiohttp_and_python_have_what_the_fast_paths_need():
    assert fast_paths.unavailable is None


def _start_up_line(value: str | None) -> str:
    environment = {key: item for key, item in os.environ.items() if key != fast_paths.VARIABLE}
    if value is not None:
        environment[fast_paths.VARIABLE] = value
    environment["PYTHONPATH"] = str(REPO)
    code = "from gateway.upstream import fast_paths; print(fast_paths.ENABLED, fast_paths.describe())"
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_fast_paths_run_unless_turned_off():
    assert _start_up_line(None).startswith("True fast paths on: aiohttp ")
    assert _start_up_line("1").startswith("True fast paths on")
    assert _start_up_line("0") == (
        "False fast paths off (PARSEGATE_FAST_PATHS=0): a task reads each backend body and awaits each send"
    )
