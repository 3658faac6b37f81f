"""Stored responses and conversations, each under the API key that made it
(a SHA-256 of the key, never the key), kept `retention_days` after their
last write (docs/state.md). A record of another key reads as missing, so
another key's id answers the same 404 as an id that never existed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from itertools import takewhile

import orjson

from gateway.ops.store.storage import RepeatedItemId, Storage, StoreUnavailable

log = logging.getLogger("parsegate.store")
PURGE_SECONDS = 3600.0
_DAY = 86400.0


def _owned_by(owner: str) -> bytes:
    """How every record of `owner` starts: `{"owner":"…",` (records are
    written with `owner` first, as they always were)."""
    return orjson.dumps({"owner": owner})[:-1] + b","


@dataclass(frozen=True)
class StoredResponse:
    """A response as kept: the response object (its output, and the id of
    the response it continued or of the conversation it is in) and the
    input items its request sent; its chain is reached by reference, never
    copied. `history` is only in a record written before that (up to
    parsegate 0.1.0's phase 3): the items of its whole chain, copied into
    it. Such a record follows no link, so a walk stops at it and its
    `history` stands for the chain before it; it is read as it was
    written, never rewritten. `served_by` is the backend URL that answered
    it, where the gateway routes its continuation (kept as `url`; None in
    a record written before, or when it was not answered by a backend)."""

    response: dict
    input_items: list[dict]
    history: list[dict] | None = None
    served_by: str | None = None

    @property
    def items(self) -> list[dict]:
        """What it adds to a chain: its input and output (after an old record's copied chain)."""
        return [*(self.history or []), *self.input_items, *self.response["output"]]


@dataclass(frozen=True)
class Chain:
    """The stored responses a request continues, oldest first, read back
    along their links from the one `previous_response_id` names. `gone` is
    the id of the response the oldest of them continued, no longer there
    (deleted or expired); `longer` says there are more than were read."""

    responses: list[StoredResponse]
    gone: str | None = None
    longer: bool = False


def _response_key(response_id: str) -> str:
    return f"response:{response_id}"


def _response_record(owner: str, stored: StoredResponse) -> tuple[str, bytes]:
    """The key and value a stored response is kept under: `owner` first,
    then the link to the response it continued (storage.py's LINK)."""
    record: dict = {"owner": owner}
    previous = stored.response.get("previous_response_id")
    if previous is not None:
        record["link"] = _response_key(previous)
    record |= {"response": stored.response, "input": stored.input_items}
    if stored.served_by is not None:
        record["url"] = stored.served_by
    return _response_key(stored.response["id"]), orjson.dumps(record)


def _stored_response(record: dict) -> StoredResponse:
    url = record.get("url")
    return StoredResponse(
        record["response"], record["input"], record.get("history"), url if isinstance(url, str) else None
    )


class ResponseStore:
    def __init__(self, storage: Storage, retention_days: float) -> None:
        self._storage = storage
        self._retention = retention_days * _DAY
        self._pending: set[asyncio.Task] = set()

    def _expiry(self) -> float:
        return time.time() + self._retention

    async def _record(self, key: str, owner: str) -> dict | None:
        """The record if it is `owner`'s: the store compares the owner at
        the start of its bytes, so another key's record is never decoded,
        and its id answers as fast as an unknown one."""
        value = await self._storage.get(key, time.time(), _owned_by(owner))
        record = orjson.loads(value) if value is not None else None
        return record if record is not None and record["owner"] == owner else None

    async def save_response(self, owner: str, stored: StoredResponse, continues: Sequence[str] = ()) -> None:
        """Store the response; the responses it `continues` (their ids) are
        kept another retention with it, so a chain in use is never cut short."""
        renew = [_response_key(response_id) for response_id in continues]
        await self._storage.put(*_response_record(owner, stored), self._expiry(), renew)

    async def response(self, owner: str, response_id: str) -> StoredResponse | None:
        record = await self._record(_response_key(response_id), owner)
        return _stored_response(record) if record is not None else None

    async def chain(self, owner: str, response_id: str, most: int) -> Chain | None:
        """The response and those it continues, at most `most` of them, in
        one call to the store; None if it is not `owner`'s."""
        values = await self._storage.chain(_response_key(response_id), time.time(), _owned_by(owner), most)
        records = list(takewhile(lambda record: record["owner"] == owner, map(orjson.loads, values)))
        if not records:
            return None
        responses = [_stored_response(record) for record in reversed(records)]
        link = records[-1].get("link")
        if link is None:
            return Chain(responses)
        if len(records) < most:
            return Chain(responses, gone=link.removeprefix("response:"))
        return Chain(responses, longer=True)

    async def delete_response(self, owner: str, response_id: str) -> bool:
        return await self._storage.delete(_response_key(response_id), _owned_by(owner))

    async def save_conversation(self, owner: str, conversation: dict) -> None:
        record = {"owner": owner, "conversation": conversation}
        await self._storage.put(f"conversation:{conversation['id']}", orjson.dumps(record), self._expiry())

    async def conversation(self, owner: str, conversation_id: str) -> dict | None:
        record = await self._record(f"conversation:{conversation_id}", owner)
        return record["conversation"] if record is not None else None

    async def update_conversation(self, owner: str, conversation: dict) -> bool:
        """Replace the conversation object if it is still there; False (and
        nothing written) once it was deleted, even after the caller read it."""
        record = {"owner": owner, "conversation": conversation}
        key = f"conversation:{conversation['id']}"
        return await self._storage.replace(key, orjson.dumps(record), self._expiry(), time.time(), _owned_by(owner))

    async def delete_conversation(self, owner: str, conversation_id: str) -> bool:
        return await self._storage.delete(f"conversation:{conversation_id}", _owned_by(owner))

    async def add_items(
        self,
        conversation_id: str,
        items: list[dict],
        max_items: int | None = None,
        response: tuple[str, StoredResponse] | None = None,
    ) -> bool:
        """Append items to a conversation the caller has read as its own;
        the conversation and all its items are kept another retention.
        False (nothing added) when it is gone, deleted since the caller
        read it. Item ids are unique in a conversation: `RepeatedItemId`
        names the first that repeats one (nothing is added), `TooManyItems`
        refuses items past `max_items`. `response` (its owner, and it) is
        stored in the same write: with the items, or, whatever refuses or
        fails, neither."""
        if not items:
            if response is not None:
                await self.save_response(*response)
            return True
        values: dict[str, bytes] = {}
        for item in items:
            if item["id"] in values:
                raise RepeatedItemId(item["id"])
            values[item["id"]] = orjson.dumps(item)
        key = f"conversation:{conversation_id}"
        record = _response_record(*response) if response is not None else None
        return await self._storage.append(key, list(values.items()), self._expiry(), time.time(), max_items, record)

    async def items(self, conversation_id: str) -> list[dict]:
        return [orjson.loads(value) for value in await self._storage.items(f"conversation:{conversation_id}")]

    async def item(self, conversation_id: str, item_id: str) -> dict | None:
        value = await self._storage.item(f"conversation:{conversation_id}", item_id)
        return orjson.loads(value) if value is not None else None

    async def remove_item(self, conversation_id: str, item_id: str) -> bool:
        return await self._storage.remove(f"conversation:{conversation_id}", item_id)

    async def purge_expired(self) -> None:
        await self._storage.purge(time.time())

    async def purge_periodically(self) -> None:
        """Delete expired records now and every `PURGE_SECONDS`, until cancelled."""
        while True:
            try:
                await self.purge_expired()
            except StoreUnavailable as error:
                log.warning("store purge failed, retried in %.0f s: %s", PURGE_SECONDS, error)
            await asyncio.sleep(PURGE_SECONDS)

    def in_background(self, write: Coroutine[object, object, object]) -> None:
        """Run a write in a task of its own (for a request that is gone);
        its failure is logged, and `close` waits for it."""
        task = asyncio.get_running_loop().create_task(write)
        self._pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("store write of a cut response failed: %s", task.exception())

    async def close(self) -> None:
        await asyncio.gather(*self._pending, return_exceptions=True)
        await self._storage.close()
