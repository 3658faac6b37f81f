"""The backend's event stream in: the payload of every `data:` line.

`data_payloads` splits the backend's bytes into lines itself, one generator
over httpx's byte stream, instead of httpx's text and line decoders stacked
on it (two more generators per chunk); payloads stay bytes for orjson.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx


async def data_payloads(response: httpx.Response) -> AsyncIterator[bytes]:
    """The payload of every `data:` line of an event stream, stripped."""
    pending = b""
    async for received in response.aiter_bytes():
        lines = (pending + received).splitlines() if pending else received.splitlines()
        pending = lines.pop() if lines and received[-1:] not in (b"\n", b"\r") else b""
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:].strip()
    if pending.startswith(b"data:"):
        yield pending[5:].strip()
