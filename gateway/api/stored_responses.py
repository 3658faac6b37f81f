"""The stored responses' routes (docs/state.md):

    GET    /v1/responses/{id}              the response object
    GET    /v1/responses/{id}/input_items  its input items, a page at a time (pages.py)
    DELETE /v1/responses/{id}
    POST   /v1/responses/{id}/cancel       refused: no response runs in the background

An id that is missing, deleted, expired or stored under another API key is
a 404 (https://platform.openai.com/docs/api-reference/responses/get)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.api.auth import owner_of
from gateway.api.pages import page
from gateway.api.responses_state import not_found, store_of, stored
from gateway.ops.errors import ApiError
from gateway.ops.json_body import json_response
from gateway.ops.store import StoredResponse


async def _stored(request: Request, response_id: str) -> StoredResponse:
    found = await stored(store_of(request).response(owner_of(request), response_id))
    if found is None:
        raise not_found("Response", response_id)
    return found


async def get_response(request: Request, response_id: str) -> Response:
    return json_response((await _stored(request, response_id)).response)


async def list_input_items(request: Request, response_id: str) -> Response:
    return json_response(page((await _stored(request, response_id)).input_items, request))


async def delete_response(request: Request, response_id: str) -> Response:
    if not await stored(store_of(request).delete_response(owner_of(request), response_id)):
        raise not_found("Response", response_id)
    return json_response({"id": response_id, "object": "response.deleted", "deleted": True})


async def cancel_response(request: Request, response_id: str) -> Response:
    raise ApiError(400, "only background responses can be cancelled, and this gateway runs none in the background")


def add_stored_response_routes(router: APIRouter) -> None:
    router.add_api_route("/responses/{response_id}", get_response, methods=["GET"])
    router.add_api_route("/responses/{response_id}", delete_response, methods=["DELETE"])
    router.add_api_route("/responses/{response_id}/input_items", list_input_items, methods=["GET"])
    router.add_api_route("/responses/{response_id}/cancel", cancel_response, methods=["POST"])
