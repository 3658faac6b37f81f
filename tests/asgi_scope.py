"""The ASGI scope uvicorn gives a POST, for tests that call the app in
process (no socket: the test plays the client's `receive` and `send`)."""

from __future__ import annotations


def post_scope(path: str, *headers: tuple[bytes, bytes]) -> dict:
    """A JSON POST to `path`, with `headers` after its content type."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
