"""The Responses API over a WebSocket: `GET /v1/responses` upgraded, the
transport Codex tries first (OpenAI's "WebSocket mode",
https://developers.openai.com/api/docs/guides/websocket-mode).

Each turn is one `response.create` message, the body of
`POST /v1/responses` with `"type": "response.create"` (`stream` is implied,
`background` refused; a `compaction_trigger` answered as over HTTP,
compaction.py); its events come back as the SSE stream's events,
one JSON text message each, made by the same producer
(`responses.produce_events`). One response runs at a time: the next
message is read once the last one's final event is sent. A refused turn
(bad request, unknown model, backend down, the concurrency limit) is one
`{"type": "error", "status": N, "error": {...}}` message, and the
connection stays open for the next turn. A `compaction_trigger` as the
last input item compacts the conversation as over HTTP (compaction.py),
its events sent as messages. `generate: false` makes the
response (its events: created, in progress, completed with no output)
without running the model: Codex's warm-up, which waits for that
`response.completed` (codex-rs/core/src/client.rs, `prewarm_websocket`).

The same API key as HTTP (on the upgrade), the same store, the same
limits. The connection keeps its own responses (`SocketMemory`), so a
turn with `store: false` continues its `previous_response_id` from there.
With `server.responses_websocket: false` the upgrade is answered 426:
Codex falls back to HTTP at once on 426 alone (client.rs,
`stream_responses_websocket`: `StatusCode::UPGRADE_REQUIRED` is
`FallbackToHttp`; any other refusal is retried five times first).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import orjson
from starlette.requests import Request
from starlette.websockets import WebSocket, WebSocketDisconnect
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

from gateway.api.auth import require_api_key
from gateway.api.compaction import asks_compaction, compaction_events, compaction_item
from gateway.api.key_limits import LEASE_STATE, KeyLease, key_lease
from gateway.api.limits import LIMIT_SCOPE_KEY, ConcurrencyLimit
from gateway.api.offload import converted, item_bound
from gateway.api.request import ItemBound, read_object
from gateway.api.responses import ResponseEvents, produce_events
from gateway.api.responses_request import ResponsesRequest, chat_request, responses_fields
from gateway.api.responses_shapes import ResponseObject, included
from gateway.api.responses_socket_memory import Remembered, SocketMemory
from gateway.api.responses_state import as_stored_items, input_items, load_state, with_referred
from gateway.api.sse import SERVER_SEND
from gateway.api.turns import chat_turn
from gateway.ops.errors import ApiError
from gateway.ops.ids import new_id
from gateway.ops.observe import RequestRecord, request_id
from gateway.upstream import fast_paths

log = logging.getLogger("parsegate.websocket")
TRANSPORT_OFF = (
    "the Responses WebSocket transport is turned off on this gateway (server.responses_websocket); "
    "use POST /v1/responses"
)


class _Create:
    """One `response.create` message, read: its JSON object as a
    Responses request (streamed), its fields, and whether to run the model."""

    __slots__ = ("raw", "asked", "generate")

    def __init__(self, raw: dict, asked: ResponsesRequest, generate: bool) -> None:
        self.raw, self.asked, self.generate = raw, asked, generate


def _read_create(body: bytes, items: ItemBound) -> _Create:
    raw = read_object(body, items)
    kind = raw.pop("type", None)
    if kind != "response.create":
        message = f"unknown message type {kind!r}: this transport takes response.create messages"
        raise ApiError(400, message, param="type", code="unknown_event_type")
    generate = raw.pop("generate", True)
    if not isinstance(generate, bool):
        raise ApiError(400, "generate must be a boolean", param="generate")
    if raw.get("background") is True:
        raise ApiError(
            400, "background responses are not run over this transport: use POST /v1/responses", param="background"
        )
    raw["stream"] = True  # implied over a WebSocket
    return _Create(raw, responses_fields(raw), generate)


def error_message(error: ApiError) -> bytes:
    """A refused turn as the transport's error message, in OpenAI's shape."""
    return orjson.dumps({"type": "error", "status": error.status, **error.body})


_PROTOCOL_READS = ("writable", "disconnected", "close_sent", "conn", "transport")  # uvicorn's, as 0.55 has them


class _SocketWriter:
    """A response's events, each one text message, sent with the server's
    own ASGI `send` where the app hands it over (`SERVER_SEND`, as event
    streams are: past the middlewares). A write from the backend's callback
    steps the send at once (no task woken, as `EventStream.write` does); one
    the client's flow control holds finishes in a task, and what is written
    meanwhile goes after it.

    Where that `send` is uvicorn's sans-I/O websockets protocol's (uvicorn's
    `ws: auto` with websockets installed), the events of one write are
    framed by its `websockets` connection (`send_text` of the UTF-8 bytes as
    they are: no str made and encoded again, compression as negotiated) and
    written to the socket at once, one write for the lot, as an event
    stream writes a backend piece's events: an ASGI message each cost a
    quarter more CPU per event than SSE (bench/README.md, "Performance IV").
    Whenever uvicorn's own `send` would wait or refuse (its flow control
    holds, the connection is closing), the ASGI messages go as before; and
    always with the fast paths off (upstream/fast_paths.py), or where the
    protocol lacks the attributes this reads (another uvicorn)."""

    __slots__ = ("_send", "_held", "_queued", "_protocol")

    def __init__(self, websocket: WebSocket) -> None:
        self._send = websocket.scope.get(SERVER_SEND, websocket.send)
        self._held: asyncio.Future[None] | None = None
        self._queued: list[bytes] = []
        protocol = getattr(self._send, "__self__", None)
        direct = fast_paths.ENABLED and type(protocol) is WebSocketsSansIOProtocol
        self._protocol = protocol if direct and all(hasattr(protocol, name) for name in _PROTOCOL_READS) else None

    def _framed_at_once(self, events: list[bytes]) -> bool:
        """Frame `events` and write them to the socket, when uvicorn's
        `send` would take them at once; False (nothing sent) otherwise."""
        protocol = self._protocol
        if (
            protocol is None
            or not protocol.writable.is_set()
            or protocol.disconnected
            or protocol.close_sent
            or protocol.conn.state is not State.OPEN
            or protocol.transport.is_closing()
        ):
            return False
        connection = protocol.conn
        for event in events:
            connection.send_text(event)
        protocol.transport.write(b"".join(connection.data_to_send()))
        return True

    async def _send_all(self, events: list[bytes]) -> None:
        if self._framed_at_once(events):
            return
        send = self._send
        for event in events:
            await send({"type": "websocket.send", "text": event.decode()})

    async def send(self, events: list[bytes]) -> None:
        if self._held is not None:
            await self._held
        await self._send_all(events)

    def write(self, events: list[bytes]) -> asyncio.Future[None] | None:
        if self._held is not None:
            self._queued.extend(events)
            return self._held
        if self._framed_at_once(events):
            return None
        sending = self._send_all(events)
        try:
            waiting = sending.send(None)
        except StopIteration:
            return None
        self._held = asyncio.ensure_future(self._finish(sending, waiting))
        return self._held

    async def _finish(self, sending: Coroutine[Any, Any, None], waiting: object) -> None:
        """Go on with the held send where it waits (`waiting`: what it yielded), then the queued events."""
        try:
            while True:
                try:
                    if isinstance(waiting, asyncio.Future):
                        await waiting
                    else:
                        await asyncio.sleep(0)  # a bare yield: go round the loop once
                except BaseException:
                    if not isinstance(waiting, asyncio.Future) or not waiting.done():
                        sending.close()  # this task was cancelled
                        raise
                try:
                    waiting = sending.send(None)  # a failed wait raises in `sending`, where it was awaited
                except StopIteration:
                    break
            while self._queued:
                events, self._queued = self._queued, []
                await self._send_all(events)
        finally:
            self._held = None


def _turn_request(websocket: WebSocket, record: RequestRecord, lease: KeyLease | None = None) -> Request:
    """One turn as the Responses pipeline reads a request: the upgrade's
    scope (its app, its headers: the key, and so the owner) as a POST,
    with a record of its own and its key's lease (for its model's limits)."""
    state = {"record": record, LEASE_STATE: lease}
    return Request({**websocket.scope, "type": "http", "method": "POST", "state": state})


async def responses_socket(websocket: WebSocket) -> None:
    """`GET /v1/responses` with `Upgrade: websocket`: 426 when the transport
    is off, 401 without a good key, else one turn per message until the
    client closes."""
    server = websocket.app.state.config.server
    if not server.responses_websocket:
        await websocket.send_denial_response(ApiError(426, TRANSPORT_OFF, code="websocket_disabled").response())
        return
    try:
        await require_api_key(_turn_request(websocket, RequestRecord(websocket.app.state.metrics, "")))
    except ApiError as error:
        await websocket.send_denial_response(error.response())
        return
    await websocket.accept()
    memory = SocketMemory()
    writer = _SocketWriter(websocket)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            body = message.get("bytes") or (message.get("text") or "").encode()
            await _turn(websocket, body, memory, writer)
    except (WebSocketDisconnect, OSError):  # the client left (the server's send raises an OSError then)
        return


async def _turn(websocket: WebSocket, body: bytes, memory: SocketMemory, writer: _SocketWriter) -> None:
    """One `response.create`: its response's events, or its error message."""
    record = RequestRecord(websocket.app.state.metrics, new_id("", 32))
    token = request_id.set(record.request_id)
    limit: ConcurrencyLimit | None = websocket.scope.get(LIMIT_SCOPE_KEY)
    lease: KeyLease | None = None
    try:
        lease = await key_lease(websocket)  # each turn counts against its key's limits, as a POST does
        if limit is None:
            await _respond(_turn_request(websocket, record, lease), body, memory, writer)
        else:
            with limit.counted():
                await _respond(_turn_request(websocket, record, lease), body, memory, writer)
    except ApiError as error:
        await websocket.send_text(error_message(error).decode())
    finally:
        if lease is not None:
            await lease.end(record)
        request_id.reset(token)


async def _respond(request: Request, body: bytes, memory: SocketMemory, writer: _SocketWriter) -> None:
    server = request.app.state.config.server
    if len(body) > server.max_body_bytes:
        raise ApiError(413, f"the message is larger than {server.max_body_bytes} bytes", code="request_too_large")
    create = await converted(request, len(body), _read_create, body, item_bound(request, "input"))
    asked = create.asked
    compacting = asks_compaction(asked.input)
    kept = asked.store is False and asked.conversation is None  # what the connection's memory serves
    remembered = memory.recall(asked.previous_response_id) if kept else None
    if remembered is not None:  # the connection's own: nothing to read from the store
        state, history = None, remembered.items
    else:
        state = await load_state(request, asked)
        asked = with_referred(asked, state)
        history = state.history if state is not None else []
    size = None if history else len(body)
    conversed = asked.model_copy(update={"input": asked.input[:-1]}) if compacting else asked
    payload, chat, tools = await converted(
        request, size, chat_request, conversed, create.raw, history, request.app.state.seal
    )
    if state is None:
        response_object = ResponseObject(asked, create.raw)
    else:
        response_object = ResponseObject(asked, create.raw, stored=state.keeps, conversation=state.conversation)
    if compacting and create.generate:  # as POST /v1/responses answers it (compaction.py)
        item, chat_usage, finish_reason = await compaction_item(request, payload, chat)
        response = response_object.finished([item], finish_reason, chat_usage)
        if state is not None:
            response = await state.save(response)
        await writer.send([orjson.dumps(event) for event in compaction_events(response)])
    elif create.generate:
        turn = await chat_turn(request, payload, chat, create.raw)
        if state is not None:
            state.routed(turn.serving.route)
        stream = await turn.stream()
        include = included(asked, request.app.state.seal)
        events = ResponseEvents(response_object, tools, turn.plan.call_id, include, sse=False)
        try:
            response = await produce_events(stream, events, state, writer)
        finally:
            await stream.release()
    else:
        response = response_object.finished([], None, None)
        if state is not None:
            response = await state.save(response)
        events = ResponseEvents(response_object, tools, _no_calls, sse=False)
        await writer.send([*events.opening(), events.final(response)])
    if kept and response["status"] != "failed":
        conversation = remembered if remembered is not None else Remembered.of(history)
        turn_items = as_stored_items(input_items(asked)) + response["output"]
        memory.remember(response["id"], conversation.then(turn_items), server.max_body_bytes)


def _no_calls(name: str, index: int) -> str:
    raise AssertionError("a response made without the model has no calls to name")
