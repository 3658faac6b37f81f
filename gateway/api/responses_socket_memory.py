"""A WebSocket connection's memory of its own responses (responses_socket.py):
what lets a turn with `store: false` continue its `previous_response_id`
without the store, as OpenAI's WebSocket mode keeps a connection's
responses in memory (https://developers.openai.com/api/docs/guides/websocket-mode).

Only `store: false` responses that continue no `conversation` are kept:
the others are the store's. Bounded two ways: the `KEPT_RESPONSES` most
recent responses (the oldest forgotten first), and each response's whole
conversation (the items a continuation starts from) at most
`server.max_body_bytes` of JSON, what one HTTP request could have sent
whole; a response past that is not kept. A
turn continuing a response the connection does not keep reads the store,
as over HTTP (404 where it is not there either). A response's items are
shared with the responses it continues (each keeps a list of references),
so the memory holds about one conversation, however many turns it took.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import orjson

KEPT_RESPONSES = 8


class Remembered(NamedTuple):
    """A response's whole conversation, its input and output last, and its size as JSON."""

    items: list[dict]
    size: int

    @classmethod
    def of(cls, items: list[dict]) -> Remembered:
        return cls(items, len(orjson.dumps(items)) if items else 0)

    def then(self, turn_items: list[dict]) -> Remembered:
        """This conversation continued by one turn's input and output."""
        return Remembered(self.items + turn_items, self.size + len(orjson.dumps(turn_items)))


class SocketMemory:
    """The responses one connection made, by id."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, Remembered] = OrderedDict()

    def recall(self, response_id: str | None) -> Remembered | None:
        if response_id is None:
            return None
        remembered = self._kept.get(response_id)
        if remembered is not None:
            self._kept.move_to_end(response_id)
        return remembered

    def remember(self, response_id: str, conversation: Remembered, max_bytes: int) -> None:
        if conversation.size > max_bytes:
            return
        self._kept[response_id] = conversation
        while len(self._kept) > KEPT_RESPONSES:
            self._kept.popitem(last=False)
