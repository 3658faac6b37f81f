"""The stored responses' routes (docs/state.md):

    GET    /v1/responses/{id}              the response object; with `stream=true`, a
                                           background response's events (`starting_after`)
    GET    /v1/responses/{id}/input_items  its input items, a page at a time (pages.py)
    DELETE /v1/responses/{id}
    POST   /v1/responses/{id}/cancel       stops a background response (responses_background.py)

An id that is missing, deleted, expired or stored under another API key is
a 404 (https://platform.openai.com/docs/api-reference/responses/get)."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.api.auth import owner_of
from gateway.api.pages import page
from gateway.api.responses_background import RUNNING, BackgroundRuns
from gateway.api.responses_state import not_found, store_of, stored
from gateway.api.sse import EventStream
from gateway.ops.errors import ApiError
from gateway.ops.json_body import json_response
from gateway.ops.store import StoredResponse


async def _stored(request: Request, response_id: str) -> StoredResponse:
    found = await stored(store_of(request).response(owner_of(request), response_id))
    if found is None:
        raise not_found("Response", response_id)
    return found


async def get_response(request: Request, response_id: str) -> Response:
    found = await _stored(request, response_id)
    if request.query_params.get("stream", "false").lower() != "true":
        return json_response(found.response)
    after = _starting_after(request.query_params.get("starting_after", "-1"))
    runs: BackgroundRuns = request.app.state.background
    events = runs.events(response_id)
    if events is None:
        message = (
            f"the events of response '{response_id}' are not kept here: a background response's events are kept "
            "by the gateway that runs it, while it runs and for a while after; retrieve it without stream"
        )
        raise ApiError(400, message, param="stream")
    return EventStream(partial(events.follow, after))


def _starting_after(value: str) -> int:
    """The sequence number a resumed stream starts after (-1: from the first event)."""
    try:
        after = int(value)
    except ValueError:
        after = -2
    if after < -1:
        raise ApiError(
            400, f"starting_after must be a sequence number (an integer from 0), got {value!r}", param="starting_after"
        )
    return after


async def list_input_items(request: Request, response_id: str) -> Response:
    return json_response(page((await _stored(request, response_id)).input_items, request))


async def delete_response(request: Request, response_id: str) -> Response:
    if not await stored(store_of(request).delete_response(owner_of(request), response_id)):
        raise not_found("Response", response_id)
    return json_response({"id": response_id, "object": "response.deleted", "deleted": True})


async def cancel_response(request: Request, response_id: str) -> Response:
    """Stop a background response that is queued or in progress: the run
    here stores it `cancelled`; one running on another gateway sharing the
    store (or none, since a crash) is marked `cancelled` for it to find.
    A response that has ended answers as it is (cancelling is idempotent)."""
    found = await _stored(request, response_id)
    if not found.response.get("background"):
        message = f"Response with id '{response_id}' was not created with background: true: only those can be cancelled"
        raise ApiError(400, message)
    if found.response["status"] in RUNNING:
        runs: BackgroundRuns = request.app.state.background
        await runs.cancel(response_id)
        found = await _stored(request, response_id)
    if found.response["status"] in RUNNING:  # run elsewhere, by none since a crash, or stopped before it began
        cancelled = StoredResponse({**found.response, "status": "cancelled"}, found.input_items)
        await stored(store_of(request).save_response(owner_of(request), cancelled))
        found = cancelled
    return json_response(found.response)


def add_stored_response_routes(router: APIRouter) -> None:
    router.add_api_route("/responses/{response_id}", get_response, methods=["GET"])
    router.add_api_route("/responses/{response_id}", delete_response, methods=["DELETE"])
    router.add_api_route("/responses/{response_id}/input_items", list_input_items, methods=["GET"])
    router.add_api_route("/responses/{response_id}/cancel", cancel_response, methods=["POST"])
