"""The fault, bad-input and secret-leak matrix, run against a running
gateway; prints one table (case, outcome, pass/fail) and exits 1 on a fail.

It starts one thing: its own scripted misbehaving backend on loopback. The
model name a request asks for picks the misbehaviour, so the gateway needs
a config whose entries point at that backend with the planted key:

    .venv/bin/python bench/robustness.py --print-config > /tmp/robust.yaml
    .venv/bin/parsegate serve --config /tmp/robust.yaml --port 8080 &
    .venv/bin/python bench/robustness.py --gateway http://127.0.0.1:8080

Every loop is bounded; everything stays on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading

import httpx
import orjson
import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

BACKEND_KEY = "sk-planted-backend-3f9a71c2"
CLIENT_KEY = "sk-planted-client-8b02d4e6"
FIELDS = ("message", "type", "param", "code")
USER = [{"role": "user", "content": "Hi"}]
left_early = threading.Event()  # the backend saw the gateway leave while it held its headers


def _chunk(text: str, reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "text": text, "finish_reason": reason}
    return b"data: " + orjson.dumps({"choices": [choice]}) + b"\n\n"


async def _pieces(pieces: list[bytes]):
    for piece in pieces:
        await asyncio.sleep(0)
        yield piece


def _error(status: int, details: dict, headers: dict | None = None) -> Response:
    return Response(orjson.dumps({"error": details}), status, headers=headers, media_type="application/json")


async def _misbehave(request: Request) -> Response:
    """The misbehaviour the model name asks for."""
    body = orjson.loads(await request.body())
    case, _, arg = body["model"].partition(":")
    if case == "secret-field":
        return _error(400, {"message": "refused", arg: f"key {BACKEND_KEY} {CLIENT_KEY}"})
    if case == "secret-cut":
        return Response(("x" * int(arg) + BACKEND_KEY + "y" * 600).encode(), 400)
    if case == "secret-event":
        event = b"data: " + orjson.dumps({"error": dict.fromkeys(FIELDS, BACKEND_KEY)}) + b"\n\n"
        return StreamingResponse(_pieces([_chunk("Hi"), event]), media_type="text/event-stream")
    if case == "cut":
        return StreamingResponse(_pieces([_chunk("Once"), _chunk(" upon")]), media_type="text/event-stream")
    if case == "reset":
        return StreamingResponse(_reset([_chunk("Once"), b'data: {"choices": [{"te']), media_type="text/event-stream")
    if case == "huge-line":
        huge = [b"data: "] + [b"x" * 65536] * 160
        return StreamingResponse(_pieces([_chunk("Hi"), *huge]), media_type="text/event-stream")
    if case == "busy":
        return _error(int(arg), {"message": "busy"}, headers={"retry-after": "7"})
    if case == "refused":
        return _error(int(arg), {"message": "invalid api key"})
    if case == "hold":
        while (await request.receive())["type"] != "http.disconnect":
            pass
        left_early.set()
        return Response(status_code=503)
    if body.get("stream"):
        return StreamingResponse(_pieces([_chunk("ok"), _chunk("", "stop"), b"data: [DONE]\n\n"]))
    return Response(orjson.dumps({"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}))


async def _reset(pieces: list[bytes]):
    """`pieces`, then the connection dropped mid-line (uvicorn logs the error)."""
    for piece in pieces:
        yield piece
    raise ConnectionResetError("scripted reset")


def start_backend(port: int) -> None:
    routes = [Route(path, _misbehave, methods=["POST"]) for path in ("/v1/chat/completions", "/v1/completions")]
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(100):
        if server.started:
            return
        threading.Event().wait(0.05)
    raise SystemExit("the misbehaving backend did not start")


def gateway_config(port: int) -> dict:
    backend = {"url": f"http://127.0.0.1:{port}/v1", "api_key": BACKEND_KEY, "retries": 0}
    return {
        "server": {"api_keys": [CLIENT_KEY]},
        "models": [
            {"name": "coder", "backend": backend, "tool_call_parser": "qwen3_coder"},
            {"name": "guided", "backend": backend, "tool_call_parser": "qwen25", "guided_decoding": "vllm"},
            {"name": "*", "backend": backend, "reasoning_parser": "none", "tool_call_parser": "none"},
        ],
    }


class Matrix:
    def __init__(self, gateway: str) -> None:
        self.http = httpx.Client(base_url=gateway, headers={"authorization": f"Bearer {CLIENT_KEY}"}, timeout=30)
        self.rows: list[tuple[str, str, bool]] = []

    def post(self, model: str, stream: bool = False, path: str = "/v1/chat/completions", **extra) -> httpx.Response:
        body = {"model": model, "stream": stream, "messages": USER, "prompt": "Hi", **extra}
        response = self.http.post(path, json=body)
        response.read()
        return response

    def row(self, case: str, response: httpx.Response, ok: bool, note: str = "") -> None:
        outcome = f"{response.status_code} {note}".strip()
        self.rows.append((case, outcome, ok))


def _leaks(text: str) -> bool:
    return any(key[:8] in text for key in (BACKEND_KEY, CLIENT_KEY))


def _stream_ends_well(text: str) -> bool:
    blocks = text.strip().split("\n\n")
    return blocks[-1] == "data: [DONE]" and '"error"' in blocks[-2] and all(b.startswith("data: ") for b in blocks)


def run(matrix: Matrix) -> None:
    for field in FIELDS:
        for stream in (False, True):
            response = matrix.post(f"secret-field:{field}", stream)
            matrix.row(f"secret in error.{field} (stream={stream})", response, not _leaks(response.text))
    for offset in range(485, 505):
        response = matrix.post(f"secret-cut:{offset}")
        matrix.row(f"secret at offset {offset} of a long error", response, not _leaks(response.text))
    response = matrix.post("secret-event", stream=True)
    matrix.row("secret in a stream error event", response, not _leaks(response.text))
    bad = [
        ("tool_calls: 5", "coder", {"messages": [*USER, {"role": "assistant", "tool_calls": 5}]}),
        ("300 levels of nesting", "coder", {"metadata": orjson.loads("[" * 300 + "]" * 300)}),
        ("properties: [1]", "coder", {"tools": [_tool({"properties": [1]})]}),
        ('{"type": 5}', "coder", {"tools": [_tool({"type": 5})]}),
        ("required + invalid parameters", "guided", {"tools": [_tool([1])], "tool_choice": "required"}),
    ]
    for case, model, extra in bad:
        for stream in (False, True):
            response = matrix.post(model, stream, **extra)
            param = response.json()["error"]["param"] if response.status_code == 400 else None
            matrix.row(f"bad input: {case} (stream={stream})", response, bool(param), f"param={param}")
    for path in ("/v1/chat/completions", "/v1/completions"):
        for case in ("cut", "reset", "huge-line"):
            response = matrix.post(case, True, path)
            matrix.row(f"{path} stream {case}", response, _stream_ends_well(response.text))
    for status in (429, 503):
        response = matrix.post(f"busy:{status}")
        ok = response.status_code == status and response.headers.get("retry-after") == "7"
        matrix.row(
            f"backend {status} with Retry-After", response, ok, f"retry-after={response.headers.get('retry-after')}"
        )
    for status in (401, 403):
        response = matrix.post(f"refused:{status}")
        matrix.row(f"backend {status}", response, response.status_code == 502 and "'refused" in response.text)
    left_early.clear()
    with contextlib.suppress(httpx.TimeoutException):
        matrix.http.post("/v1/chat/completions", json={"model": "hold", "messages": USER}, timeout=0.5)
    seen = left_early.wait(1.0)
    matrix.rows.append(("client leaves before the first byte", "upstream cancelled" if seen else "upstream kept", seen))
    openapi = httpx.get(str(matrix.http.base_url.join("/openapi.json")), timeout=10)
    matrix.row("/openapi.json without a key", openapi, openapi.status_code == 401)


def _tool(parameters: object) -> dict:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway", help="base URL of a gateway running --print-config's config")
    parser.add_argument("--backend-port", type=int, default=18931, help="loopback port of the misbehaving backend")
    parser.add_argument("--print-config", action="store_true", help="print the gateway config (YAML) and exit")
    args = parser.parse_args()
    if args.print_config or not args.gateway:
        print(yaml.safe_dump(gateway_config(args.backend_port), sort_keys=False), end="")
        return 0
    start_backend(args.backend_port)
    matrix = Matrix(args.gateway)
    run(matrix)
    width = max(len(case) for case, _, _ in matrix.rows)
    print(f"{'case':<{width}}  {'outcome':<28}  result")
    for case, outcome, ok in matrix.rows:
        print(f"{case:<{width}}  {outcome:<28}  {'pass' if ok else 'FAIL'}")
    failed = sum(not ok for _, _, ok in matrix.rows)
    print(f"{len(matrix.rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
