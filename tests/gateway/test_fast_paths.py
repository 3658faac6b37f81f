"""The fast paths' start-up check (gateway/upstream/fast_paths.py): the
installed aiohttp and Python have the internals the fast paths use, so the
gateway runs them (a release that drops them is caught here: the gateway
then takes the fallbacks, correct but slower); `PARSEGATE_FAST_PATHS=0`
turns them off, and the start-up line says which paths run."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx

from gateway.api.server_write import server_cycle
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


def test_uvicorns_httptools_server_has_what_the_direct_write_needs(serve):
    """A streamed response on the server the gateway runs (uvicorn, with
    httptools) lets its events be written straight to the connection
    (gateway/api/server_write.py); where it would not, the stream sends
    through the server's `send`, correct but slower."""
    found: list[object] = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        found.append(server_cycle(send))
        await send({"type": "http.response.body", "body": b"ok", "more_body": False})

    assert httpx.get(serve(app)).text == "ok"
    assert found[0] is not None
