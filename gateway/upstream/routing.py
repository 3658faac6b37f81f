"""The optional catch-all model entry (`name: "*"`): every model name no
other entry serves goes to its backend, as that name (or `backend.model`).

In `GET /v1/models` it stands for the models its backend lists itself (when
the requested name is what goes upstream): those are the names it can serve.
"""

from __future__ import annotations

from gateway.ops.config import CATCH_ALL
from gateway.ops.deadline import Deadline
from gateway.ops.errors import ApiError
from gateway.upstream.backend import Backend

LISTING_TIMEOUT = 5.0


def route(backends: dict[str, Backend], requested: str) -> Backend | None:
    """The backend serving `requested`: its own entry, else the catch-all's."""
    backend = backends.get(requested)
    if backend is not None:
        return backend
    catch_all = backends.get(CATCH_ALL)
    return catch_all.routed(catch_all.config.routed(requested)) if catch_all is not None else None


async def served_models(backends: dict[str, Backend]) -> list[tuple[str, Backend]]:
    """(model name, backend) for `GET /v1/models`: every named entry, then
    the names the catch-all's backend lists that no entry has."""
    served = [(name, backend) for name, backend in backends.items() if name != CATCH_ALL]
    catch_all = backends.get(CATCH_ALL)
    if catch_all is not None:
        served += [(name, catch_all) for name in await _upstream_model_ids(catch_all) if name not in backends]
    return served


async def _upstream_model_ids(catch_all: Backend) -> list[str]:
    """The model ids the catch-all's backend lists; none when it sends every
    request to one fixed `backend.model`, or when it cannot say."""
    if catch_all.config.backend.model:
        return []
    listing: object = None
    with Deadline(LISTING_TIMEOUT, move_on=True):
        try:
            listing = await catch_all.fetch("/models")
        except ApiError:
            return []
    listed = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(listed, list):
        return []
    return [model["id"] for model in listed if isinstance(model, dict) and isinstance(model.get("id"), str)]
