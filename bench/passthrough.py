#!/usr/bin/env python3
"""Trivial pass-through OpenAI proxy on the designated stack (no reasoning/tool parsing).

Copied unchanged (but for formatting) from ../shared/bench/passthrough.py, the shared
bench kit whose anchors bench/README.md quotes, so that the bench runs from a
clone on its own.

FastAPI + uvicorn (uvloop, httptools) + httpx.AsyncClient + sse-starlette + orjson.
This is the *floor* a parsing gateway built on the same stack can reach.

Modes (--mode / PT_MODE):
  sse  (default, the "(c)" anchor): httpx aiter_lines() over the backend SSE,
        every ``data:`` payload re-emitted verbatim as one sse-starlette event
        (EventSourceResponse, sep="\\n", no ping).  No JSON parsing.
  json: like sse, but each payload is orjson.loads'ed, lightly rewritten
        (model name replaced) and orjson.dumps'ed -- the minimum per-chunk work
        of any gateway that rebuilds chunks.
  raw:  byte pass-through (httpx aiter_raw -> starlette StreamingResponse), no SSE
        framing at all -- the absolute floor of FastAPI + httpx.

Run:  taskset -c 1 python passthrough.py --port 8200 \
          --backend http://127.0.0.1:8100 --mode sse
"""

from __future__ import annotations

import argparse
import os
import sys

import httpx
import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from sse_starlette.sse import EventSourceResponse

BACKEND = os.environ.get("PT_BACKEND", "http://127.0.0.1:8100")
MODE = os.environ.get("PT_MODE", "sse")

app = FastAPI()
client: httpx.AsyncClient | None = None


@app.on_event("startup")
async def _startup():
    global client
    client = httpx.AsyncClient(
        base_url=BACKEND,
        timeout=httpx.Timeout(60.0, connect=5.0),
        limits=httpx.Limits(max_connections=4096, max_keepalive_connections=4096),
    )


@app.on_event("shutdown")
async def _shutdown():
    if client is not None:
        await client.aclose()


async def _proxy(path: str, request: Request):
    body = await request.body()
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return Response(b'{"error":"invalid json"}', status_code=400, media_type="application/json")
    headers = {"content-type": "application/json"}
    if not payload.get("stream"):
        r = await client.post(path, content=body, headers=headers)
        return Response(r.content, status_code=r.status_code, media_type="application/json")
    req = client.build_request("POST", path, content=body, headers=headers)
    resp = await client.send(req, stream=True)
    if resp.status_code != 200:
        content = await resp.aread()
        await resp.aclose()
        return Response(content, status_code=resp.status_code, media_type="application/json")

    if MODE == "raw":

        async def raw_gen():
            try:
                async for b in resp.aiter_raw():
                    yield b
            finally:
                await resp.aclose()

        return StreamingResponse(raw_gen(), media_type="text/event-stream")

    rewrite = MODE == "json"
    model = payload.get("model")

    async def gen():
        try:
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].lstrip()
                if rewrite and data != "[DONE]":
                    o = orjson.loads(data)
                    o["model"] = model
                    data = orjson.dumps(o).decode()
                yield {"data": data}
        finally:
            await resp.aclose()

    return EventSourceResponse(gen(), sep="\n", ping=None)


@app.post("/v1/chat/completions")
async def chat(request: Request):
    return await _proxy("/v1/chat/completions", request)


@app.post("/v1/completions")
async def completions(request: Request):
    return await _proxy("/v1/completions", request)


@app.get("/health")
async def health():
    return {"status": "ok"}


def main():
    global BACKEND, MODE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PT_PORT", "8200")))
    ap.add_argument("--backend", default=BACKEND)
    ap.add_argument("--mode", default=MODE, choices=["sse", "json", "raw"])
    a = ap.parse_args()
    if not (a.host.startswith("127.") or a.host in ("localhost", "::1")):
        sys.exit("refusing to bind a non-loopback address")
    BACKEND, MODE = a.backend, a.mode
    print(f"passthrough mode={MODE} backend={BACKEND} pid={os.getpid()}", flush=True)
    uvicorn.run(
        app,
        host=a.host,
        port=a.port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        backlog=4096,
    )


if __name__ == "__main__":
    main()
