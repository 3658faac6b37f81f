"""A loopback HTTP server that answers each path as scripted, for the
backend calls that are not generations (`GET /v1/models`, `GET /props`,
the tokenizers): a JSON answer, or `HANG`, which takes the request and
never answers, and notes when the gateway closes the connection.

It speaks just enough HTTP/1.1 by hand (asyncio streams, its own thread),
so that a request can be held without any framework's timeouts.
"""

from __future__ import annotations

import asyncio
import json
import threading

HANG = "hang"  # a route answer: take the request and never answer
NOT_FOUND = (404, {"error": {"message": "Not Found", "type": "not_found_error"}})


class ScriptedBackend:
    """`routes[path]` is `(status, JSON body)` or `HANG`; unscripted paths are
    404. `requests` records (method, path, headers, JSON body or None).
    `held` is released once per request held by `HANG`, `left` once per
    held request whose connection the gateway then closed."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, object] | str] = {}
        self.requests: list[tuple[str, str, dict[str, str], object]] = []
        self.held = threading.Semaphore(0)
        self.left = threading.Semaphore(0)
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self.port = 0

        async def start() -> None:
            server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]

        def run() -> None:
            self._loop.run_until_complete(start())
            started.set()
            self._loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        started.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def asked(self, path: str) -> int:
        """How many requests came for `path`."""
        return sum(1 for _, asked, _, _ in self.requests if asked == path)

    def received(self, path: str) -> list[object]:
        """The JSON bodies sent to `path`, in order."""
        return [body for _, asked, _, body in self.requests if asked == path]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, value in (line.split(":", 1) for line in head[1:] if ":" in line)
                }
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((method, path, headers, json.loads(raw) if raw else None))
                answer = self.routes.get(path, NOT_FOUND)
                if answer == HANG:
                    self.held.release()
                    await reader.read()  # until the gateway closes the connection
                    self.left.release()
                    return
                status, body = answer
                data = json.dumps(body).encode()
                writer.write(
                    f"HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def chat_answer(text: str) -> tuple[int, dict]:
    """A non-streamed chat completion whose message is `text`."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    return 200, {"id": "up-1", "object": "chat.completion", "model": "m", "choices": [choice]}


def completion_answer(text: str) -> tuple[int, dict]:
    """A non-streamed text completion whose text is `text`."""
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "stop"}
    return 200, {"id": "cmpl-1", "object": "text_completion", "model": "m", "choices": [choice]}
