"""OpenAI's list pagination (`after`, `before`, `limit`, `order`) over a
list of items with ids, as `GET /v1/responses/{id}/input_items` and
`GET /v1/conversations/{id}/items` answer it:
`{"object": "list", "data", "first_id", "last_id", "has_more"}`
(https://platform.openai.com/docs/api-reference/responses/input-items)."""

from __future__ import annotations

from fastapi import Request

from gateway.ops.errors import ApiError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def _limit(request: Request) -> int:
    given = request.query_params.get("limit", str(DEFAULT_LIMIT))
    if not (given.isascii() and given.isdigit()) or not 1 <= int(given) <= MAX_LIMIT:  # "²".isdigit() too
        raise ApiError(400, f"limit must be an integer from 1 to {MAX_LIMIT}, got {given!r}", param="limit")
    return int(given)


def _position(ids: list[str], request: Request, name: str) -> int | None:
    cursor = request.query_params.get(name)
    if cursor is None:
        return None
    if cursor not in ids:
        raise ApiError(400, f"{name} names no item of this list: {cursor!r}", param=name)
    return ids.index(cursor)


def page(items: list[dict], request: Request) -> dict:
    """The page of `items` (oldest first) the request's query asks for;
    `order` is `desc` (newest first) unless it says `asc`."""
    order = request.query_params.get("order", "desc")
    if order not in ("asc", "desc"):
        raise ApiError(400, f'order must be "asc" or "desc", got {order!r}', param="order")
    ordered = items if order == "asc" else items[::-1]
    ids = [item["id"] for item in ordered]
    after, before = _position(ids, request, "after"), _position(ids, request, "before")
    start = after + 1 if after is not None else 0
    end = before if before is not None else len(ordered)
    limit = _limit(request)
    window = ordered[start:end]
    data = window[-limit:] if before is not None and after is None else window[:limit]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": len(window) > len(data),
    }
