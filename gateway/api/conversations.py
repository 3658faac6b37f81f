"""Conversations (docs/state.md), as OpenAI's Conversations API has them
(https://platform.openai.com/docs/api-reference/conversations):

    POST   /v1/conversations                          create, with `items` and `metadata`
    GET    /v1/conversations/{id}                     the conversation object
    POST   /v1/conversations/{id}                     update its `metadata`
    DELETE /v1/conversations/{id}                     delete it and its items
    GET    /v1/conversations/{id}/items               its items, a page at a time (pages.py)
    POST   /v1/conversations/{id}/items               add `items`
    GET    /v1/conversations/{id}/items/{item_id}     one item
    DELETE /v1/conversations/{id}/items/{item_id}     delete one item

A response request with `conversation` continues its items and adds its
input and output to them (responses_state.py)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.api.auth import owner_of
from gateway.api.compaction_seal import Seal
from gateway.api.limits import read_body
from gateway.api.metadata import checked_metadata
from gateway.api.pages import page
from gateway.api.request import read_object
from gateway.api.responses_items import check_continuable
from gateway.api.responses_state import already_held, as_stored_items, check_unique_ids, not_found, store_of, stored
from gateway.ops.errors import ApiError
from gateway.ops.ids import UNGUESSABLE, new_id
from gateway.ops.json_body import json_response
from gateway.ops.store import RepeatedItemId, TooManyItems

_MAX_ITEMS = 20  # per create or add call, as OpenAI's API


async def _body(request: Request) -> dict:
    return read_object(await read_body(request, request.app.state.config.server.max_body_bytes))


def _items(body: dict, seal: Seal) -> list[dict]:
    items = body.get("items", [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ApiError(400, "items must be an array of item objects", param="items")
    if len(items) > _MAX_ITEMS:
        raise ApiError(400, f"items may hold at most {_MAX_ITEMS} items, got {len(items)}", param="items")
    check_continuable(items, "items", seal)
    stored_items = as_stored_items(items)
    check_unique_ids(stored_items, "items", set())
    return stored_items


async def _add(request: Request, conversation_id: str, items: list[dict]) -> None:
    """Add `items` to the conversation: 400 naming the item whose id it
    holds already, or when it would hold more than `max_input_items` (the
    most a response continuing it may send); 404 when it was deleted
    since it was read (nothing added)."""
    limit = request.app.state.config.server.max_input_items
    try:
        if not await stored(store_of(request).add_items(conversation_id, items, limit)):
            raise not_found("Conversation", conversation_id)
    except RepeatedItemId as error:
        raise already_held(items, "items", error) from None
    except TooManyItems as error:
        message = (
            f"the conversation holds {error.held} items; {len(items)} more would pass the {limit} it may hold "
            "(max_input_items): delete items from it or start a new conversation"
        )
        raise ApiError(400, message, param="items", code="array_above_max_length") from None


async def _conversation(request: Request, conversation_id: str) -> dict:
    found = await stored(store_of(request).conversation(owner_of(request), conversation_id))
    if found is None:
        raise not_found("Conversation", conversation_id)
    return found


async def create_conversation(request: Request) -> Response:
    body = await _body(request)
    items, metadata = _items(body, request.app.state.seal), checked_metadata(body.get("metadata"))
    conversation_id = new_id("conv_", UNGUESSABLE)
    conversation = {
        "id": conversation_id,
        "object": "conversation",
        "created_at": int(time.time()),
        "metadata": metadata,
    }
    limit = request.app.state.config.server.max_input_items
    if len(items) > limit:
        message = f"a conversation may hold at most {limit} items (max_input_items), got {len(items)}"
        raise ApiError(400, message, param="items", code="array_above_max_length")
    await stored(store_of(request).save_conversation(owner_of(request), conversation))
    await _add(request, conversation_id, items)  # items are added only to a conversation that is there
    return json_response(conversation)


async def get_conversation(request: Request, conversation_id: str) -> Response:
    return json_response(await _conversation(request, conversation_id))


async def update_conversation(request: Request, conversation_id: str) -> Response:
    body = await _body(request)
    conversation = {**await _conversation(request, conversation_id), "metadata": checked_metadata(body.get("metadata"))}
    if not await stored(store_of(request).update_conversation(owner_of(request), conversation)):
        raise not_found("Conversation", conversation_id)  # deleted since it was read: it stays deleted
    return json_response(conversation)


async def delete_conversation(request: Request, conversation_id: str) -> Response:
    if not await stored(store_of(request).delete_conversation(owner_of(request), conversation_id)):
        raise not_found("Conversation", conversation_id)
    return json_response({"id": conversation_id, "object": "conversation.deleted", "deleted": True})


async def list_items(request: Request, conversation_id: str) -> Response:
    await _conversation(request, conversation_id)
    return json_response(page(await stored(store_of(request).items(conversation_id)), request))


async def add_items(request: Request, conversation_id: str) -> Response:
    body = await _body(request)
    await _conversation(request, conversation_id)
    items = _items(body, request.app.state.seal)
    await _add(request, conversation_id, items)
    first, last = (items[0]["id"], items[-1]["id"]) if items else (None, None)
    return json_response({"object": "list", "data": items, "first_id": first, "last_id": last, "has_more": False})


async def get_item(request: Request, conversation_id: str, item_id: str) -> Response:
    await _conversation(request, conversation_id)
    item = await stored(store_of(request).item(conversation_id, item_id))
    if item is None:
        raise not_found("Item", item_id)
    return json_response(item)


async def delete_item(request: Request, conversation_id: str, item_id: str) -> Response:
    conversation = await _conversation(request, conversation_id)
    if not await stored(store_of(request).remove_item(conversation_id, item_id)):
        raise not_found("Item", item_id)
    return json_response(conversation)


def add_conversation_routes(router: APIRouter) -> None:
    router.add_api_route("/conversations", create_conversation, methods=["POST"])
    router.add_api_route("/conversations/{conversation_id}", get_conversation, methods=["GET"])
    router.add_api_route("/conversations/{conversation_id}", update_conversation, methods=["POST"])
    router.add_api_route("/conversations/{conversation_id}", delete_conversation, methods=["DELETE"])
    router.add_api_route("/conversations/{conversation_id}/items", list_items, methods=["GET"])
    router.add_api_route("/conversations/{conversation_id}/items", add_items, methods=["POST"])
    router.add_api_route("/conversations/{conversation_id}/items/{item_id}", get_item, methods=["GET"])
    router.add_api_route("/conversations/{conversation_id}/items/{item_id}", delete_item, methods=["DELETE"])
