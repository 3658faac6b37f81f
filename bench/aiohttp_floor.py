"""The floor of a proxy on parsegate's stack: FastAPI and uvicorn in front,
aiohttp's client behind, every piece of the backend's stream copied to the
client as it comes (starlette's StreamingResponse: no SSE framing, no
parsing, no middleware, no deadlines). Issue 23's table measured this kind
of proxy at 0.2-0.4x the pass-through's CPU per chunk; `paired` in
bench/gateway_bench.py loads it beside the pass-through, so that a reader
sees how much of parsegate's cost is the stack's.

    python bench/aiohttp_floor.py --port 8300 --backend http://127.0.0.1:8100
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator

import aiohttp
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse


def floor_app(backend: str) -> FastAPI:
    app = FastAPI()
    sessions: list[aiohttp.ClientSession] = []

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        if not sessions:
            sessions.append(aiohttp.ClientSession())
        upstream = await sessions[0].post(
            backend + "/v1/chat/completions", data=await request.body(), headers={"content-type": "application/json"}
        )

        async def pieces() -> AsyncIterator[bytes]:
            try:
                async for piece in upstream.content.iter_any():
                    yield piece
            finally:
                upstream.release()

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8300)
    parser.add_argument("--backend", default="http://127.0.0.1:8100")
    args = parser.parse_args()
    uvicorn.run(floor_app(args.backend), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
