"""What a Responses request reads from and leaves in the store
(docs/state.md): the items it continues (`previous_response_id`: that
response's chain, input and output; `conversation`: the conversation's
items), and, once answered, the response (unless `store: false`) and the
conversation's new items. `instructions` are never carried over, as in
OpenAI's API. An `item_reference` in the input names an item of what the
request continues, and stands for a copy of it. A request with `store: false` that continues nothing never
touches the store."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

import orjson
from fastapi import Request

from gateway.api.auth import owner_of
from gateway.api.offload import item_bound
from gateway.api.responses_request import ResponsesRequest
from gateway.ops.errors import ApiError
from gateway.ops.ids import UNGUESSABLE, new_id
from gateway.ops.observe import request_id
from gateway.ops.store import Chain, RepeatedItemId, ResponseStore, StoredResponse, StoreUnavailable, TooManyItems
from gateway.upstream.balancer import Route

_Result = TypeVar("_Result")
log = logging.getLogger("parsegate.store")
STORE_UNAVAILABLE = "the response store cannot be reached or written just now; try again later"
REFERENCE = "item_reference"
_ITEM_PREFIXES = {"message": "msg", "reasoning": "rs", "function_call": "fc", "custom_tool_call": "ctc"}


async def stored(work: Awaitable[_Result]) -> _Result:
    """`work`'s result; a store that fails is a 503 that says so in words,
    its detail (a file's path, a server's address) logged with the request
    id, never sent to the client."""
    try:
        return await work
    except StoreUnavailable as error:
        _log(error)
        raise ApiError(503, STORE_UNAVAILABLE, type="server_error", code="store_unavailable") from None


def _log(error: StoreUnavailable) -> None:
    rid = request_id.get()
    log.error("request %s: %s", rid, error, extra={"request_id": rid})


def store_of(request: Request, param: str | None = None) -> ResponseStore:
    """The app's store; with `store.backend: none`, a 400 naming `param`,
    or a 404 for a route that reads stored objects."""
    store: ResponseStore | None = request.app.state.store
    if store is None:
        message = "this gateway keeps no responses (store.backend is none)"
        if param is not None:
            raise ApiError(400, f"{param} is not supported: {message}; send the whole input", param=param)
        raise ApiError(404, f"not found: {message}", code="not_found")
    return store


def not_found(kind: str, object_id: str, param: str | None = None) -> ApiError:
    return ApiError(404, f"{kind} with id '{object_id}' not found", param=param, code="not_found")


def check_unique_ids(items: list[dict], field: str, taken: set[str]) -> None:
    """400 naming `field[i].id` when an item repeats the id of one before
    it, or one of `taken` (the conversation's): OpenAI's API takes item ids
    as unique ("Duplicate item found with id …")."""
    seen = set(taken)
    for index, item in enumerate(items):
        if item["id"] in seen:
            raise _repeated(field, index, item["id"])
        seen.add(item["id"])


def already_held(items: list[dict], field: str, error: RepeatedItemId) -> ApiError:
    """The 400 for the store's refusal of `items`, checked unique among
    themselves: one of their ids was the conversation's already."""
    return _repeated(field, next(i for i, item in enumerate(items) if item["id"] == error.item_id), error.item_id)


def _repeated(field: str, index: int, item_id: str) -> ApiError:
    message = (
        f"Duplicate item found with id '{item_id}' ({field}[{index}].id): item ids are unique in a conversation "
        "and in a request; leave id out to have one made"
    )
    return ApiError(400, message, param=f"{field}[{index}].id")


def as_stored_items(items: list[dict]) -> list[dict]:
    """Input items as stored and listed: each with an id (kept if it has
    one); a message in OpenAI's item shape, its text content a part."""
    return [_stored_item(item) for item in items]


def _stored_item(item: dict) -> dict:
    kind = item.get("type", "message")
    given = {key: value for key, value in item.items() if key != "id" or value is not None}
    stored_item = {"id": new_id(_ITEM_PREFIXES.get(kind, "item") + "_", UNGUESSABLE), "type": kind, **given}
    if kind == "message":
        stored_item.setdefault("status", "completed")
        if isinstance(item.get("content"), str):
            part = "output_text" if item.get("role") == "assistant" else "input_text"
            stored_item["content"] = [{"type": part, "text": item["content"]}]
    return stored_item


def input_items(asked: ResponsesRequest) -> list[dict]:
    """The request's input as items (a string is one user message)."""
    if isinstance(asked.input, str):
        return [{"type": "message", "role": "user", "content": asked.input}]
    return asked.input


def conversation_id(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return value["id"]
    raise ApiError(400, "conversation must be a conversation id or an object with an id", param="conversation")


@dataclass
class ResponseState:
    """One request's state: the items it continues, and where its own go."""

    store: ResponseStore
    owner: str
    keeps: bool
    history: list[dict] = field(default_factory=list)
    input: list[dict] = field(default_factory=list)
    conversation: str | None = None
    max_items: int | None = None  # the most items the conversation may hold (max_input_items)
    continues: list[str] = field(default_factory=list)  # the ids of the chain's responses, kept on with it
    continued_url: str | None = None  # the backend URL that served the response it continues
    route: Route | None = None  # where its turn went (`routed`): the stored response keeps its URL
    referred: list[dict] | None = None  # the input with its `item_reference`s resolved, when it had any

    async def save(self, response: dict) -> dict:
        """Store the answered (or cut) response, unless `store: false`, and
        add its input and output to the conversation, in one write: both
        or neither. The response as answered: when the store fails, the
        answer is not lost, and says what was not kept (`store: false`, a
        `parsegate_warning`). A 400 naming `conversation` (and nothing
        stored) when they would put it past `max_input_items`, which no
        later turn could continue."""
        try:
            await self._write(response)
        except StoreUnavailable as error:
            _log(error)
            return {**response, "store": False, "parsegate_warning": _not_stored(self.keeps, self.conversation)}
        return response

    def routed(self, route: Route) -> None:
        """The turn goes on `route`: to the URL that served the response it
        continues, while that one is healthy (upstream/balancer.py)."""
        route.prefer = self.continued_url
        self.route = route

    async def _write(self, response: dict) -> None:
        stored = StoredResponse(response, self.input, served_by=self.route.served_by if self.route else None)
        if self.conversation is None:
            if self.keeps:
                await self.store.save_response(self.owner, stored, self.continues)
            return
        added = [*self.input, *response["output"]]
        kept = (self.owner, stored) if self.keeps else None
        try:
            if not await self.store.add_items(self.conversation, added, self.max_items, kept):
                raise not_found("Conversation", self.conversation, "conversation")  # deleted meanwhile
        except RepeatedItemId as error:  # an id added to the conversation since `load_state` checked
            raise already_held(added, "input", error) from None
        except TooManyItems as error:
            raise _conversation_full(error.held, len(self.input), len(response["output"]), self.max_items) from None

    def save_later(self, response: dict) -> None:
        """`save`, for a stream its client cut: in a task of its own, which closing the store waits for."""
        self.store.in_background(self.save(response))


def _not_stored(keeps: bool, conversation: str | None) -> dict:
    """What a response whose store failed after it was answered says it lost."""
    lost = "this response was not stored: it cannot be retrieved, or continued with previous_response_id"
    if conversation is not None:
        added = f"its input and output were not added to conversation {conversation}"
        lost = f"{lost}, and {added}" if keeps else added
    return {"code": "store_unavailable", "message": f"the response store could not be written: {lost}"}


async def load_state(request: Request, asked: ResponsesRequest) -> ResponseState | None:
    """The request's ResponseState; None for a stateless request (`store: false`
    continuing nothing, or any request when the store is `none` and it
    asks for no state)."""
    chained = asked.previous_response_id is not None or asked.conversation is not None
    given = input_items(asked)
    references = [index for index, item in enumerate(given) if item.get("type") == REFERENCE]
    for index in references:
        if not isinstance(given[index].get("id"), str):
            raise ApiError(
                400, f"input[{index}].id: an item_reference needs the id of an item", param=f"input[{index}].id"
            )
    if references and not chained:
        raise _unreferenced(request, given, references[0])
    if asked.store is False and not chained:
        return None
    if request.app.state.store is None and not chained and not asked.store:
        return None  # the default store: true with no store: stateless, as OpenAI's store: false
    param = "previous_response_id" if asked.previous_response_id is not None else "conversation" if chained else "store"
    store = store_of(request, param)
    if asked.previous_response_id is not None and asked.conversation is not None:
        raise ApiError(400, "previous_response_id and conversation cannot both be set", param="conversation")
    state = ResponseState(store, owner_of(request), keeps=asked.store is not False)
    limit = item_bound(request, "input").limit(asked.model)
    chain = None
    if asked.previous_response_id is not None:
        chain = await stored(store.chain(state.owner, asked.previous_response_id, limit + 1))
        if chain is None:
            raise not_found("Previous response", asked.previous_response_id, "previous_response_id")
        state.history = await _chain_items(store, state.owner, asked.previous_response_id, chain)
        state.continues = [stored_response.response["id"] for stored_response in chain.responses]
        state.continued_url = chain.responses[-1].served_by if chain.responses else None
    elif asked.conversation is not None:
        state.conversation = conversation_id(asked.conversation)
        if await stored(store.conversation(state.owner, state.conversation)) is None:
            raise not_found("Conversation", state.conversation, "conversation")
        state.history = await stored(store.items(state.conversation))
    if references:
        given = state.referred = _resolved(given, state.history)
    state.input = as_stored_items(given)
    _check_continued(request, limit, state, param)
    if chain is not None and chain.longer:
        raise _too_long(len(chain.responses), limit)
    if state.conversation is not None:
        state.max_items = limit
        if len(state.history) + len(state.input) >= limit:  # no room left for the response's output
            raise _conversation_full(len(state.history), len(state.input), None, limit)
    taken = {item["id"] for item in state.history} if state.conversation is not None else set()
    check_unique_ids(state.input, "input", taken)
    return state


def with_referred(asked: ResponsesRequest, state: ResponseState | None) -> ResponsesRequest:
    """`asked` with its input's `item_reference`s resolved, where it had any."""
    if state is None or state.referred is None:
        return asked
    return asked.model_copy(update={"input": state.referred})


def _resolved(given: list[dict], history: list[dict]) -> list[dict]:
    """`given` with each `item_reference` replaced by the item of `history`
    it names, a copy without its id (stored again under a new one); a 404
    naming `input[i].id` for an id `history` does not hold."""
    held = {item["id"]: item for item in history}
    resolved = []
    for index, item in enumerate(given):
        if item.get("type") == REFERENCE:
            if item.get("id") not in held:
                raise _unknown_reference(index, item.get("id"))
            item = {key: value for key, value in held[item["id"]].items() if key != "id"}
        resolved.append(item)
    return resolved


def _unreferenced(request: Request, given: list[dict], index: int) -> ApiError:
    """The error for an `item_reference` in a request that continues
    nothing: a 400 when the gateway keeps no items, else a 404 (only the
    items a request continues are referred to, docs/state.md)."""
    place = f"input[{index}].id"
    if request.app.state.store is None:
        message = (
            f"{place}: an item_reference is not supported: this gateway keeps no responses (store.backend is none); "
            "send the item itself"
        )
        return ApiError(400, message, param=place)
    return _unknown_reference(index, given[index].get("id"))


def _unknown_reference(index: int, item_id: object) -> ApiError:
    message = (
        f"Item with id '{item_id}' not found (input[{index}].id): an item_reference names an item of the chain "
        "(previous_response_id) or the conversation this request continues"
    )
    return ApiError(404, message, param=f"input[{index}].id", code="not_found")


async def _chain_items(store: ResponseStore, owner: str, asked: str, chain: Chain) -> list[dict]:
    """The items a chain continues, in order: what its oldest response
    continued (the items of its conversation before its own), then each
    response's input and output. A 404 naming what is gone when the chain
    goes through a response deleted or expired (or a conversation that no
    longer holds the oldest one's items): a chain is never continued with
    a hole in it (docs/state.md)."""
    if chain.gone is not None:
        message = (
            f"Previous response with id '{chain.gone}' not found: '{asked}' continues it, and it was deleted or "
            "has expired; start a new chain"
        )
        raise ApiError(404, message, param="previous_response_id", code="not_found")
    oldest = chain.responses[0]
    before: list[dict] = []
    conversation = oldest.response.get("conversation")
    if oldest.history is None and conversation is not None:
        before = await _conversation_before(store, owner, conversation["id"], oldest)
    return [*before, *(item for stored_response in chain.responses for item in stored_response.items)]


async def _conversation_before(
    store: ResponseStore, owner: str, conversation: str, response: StoredResponse
) -> list[dict]:
    """The items of `conversation` before those `response` added to it."""
    own = {item["id"] for item in (*response.input_items, *response.response["output"])}
    items = await stored(store.items(conversation)) if await stored(store.conversation(owner, conversation)) else []
    place = next((index for index, item in enumerate(items) if item["id"] in own), None)
    if place is None:
        message = (
            f"Conversation with id '{conversation}' not found, or it no longer holds the items of response "
            f"'{response.response['id']}', which previous_response_id continues; start a new chain"
        )
        raise ApiError(404, message, param="previous_response_id", code="not_found")
    return items[:place]


def _too_long(read: int, limit: int) -> ApiError:
    message = (
        f"previous_response_id continues a chain of more than {read} responses: more than a request may hold "
        f"(max_input_items: {limit}); start a new chain"
    )
    return ApiError(400, message, param="previous_response_id", code="array_above_max_length")


def _conversation_full(held: int, given: int, answered: int | None, limit: int | None) -> ApiError:
    """The 400 for a conversation that would hold more than `limit` items
    with a response's `given` input and `answered` output items (None:
    before it is answered, when the input leaves no room for any)."""
    added = f"{answered} output items" if answered is not None else "any output"
    left = "they were not added" if answered is not None else "nothing was sent"
    message = (
        f"the conversation holds {held} items; with this response's {given} input items and {added} it would "
        f"pass the {limit} it may hold (max_input_items), and no later response could continue it, so {left}: "
        "delete items from the conversation, or start a new one"
    )
    return ApiError(400, message, param="conversation", code="array_above_max_length")


def _check_continued(request: Request, limit: int, state: ResponseState, param: str) -> None:
    """400 naming `param` when the items a request continues are more than
    a request may send itself (docs/state.md): with its input, more than
    `limit` (`max_input_items`); or more than `max_body_bytes` of JSON. Each turn of
    a chain carries the whole chain, so without this bound one request
    would load and convert a history that only ever grows."""
    if len(state.history) + len(state.input) > limit:
        message = (
            f"{param} continues {len(state.history)} items, and input adds {len(state.input)}: more than the "
            f"{limit} a request may hold (max_input_items); start a new chain or conversation"
        )
        raise ApiError(400, message, param=param, code="array_above_max_length")
    max_bytes = request.app.state.config.server.max_body_bytes
    size = len(orjson.dumps(state.history))
    if size > max_bytes:
        message = (
            f"{param} continues {size} bytes of items: more than the {max_bytes} a request may send "
            "(max_body_bytes); start a new chain or conversation"
        )
        raise ApiError(400, message, param=param)
