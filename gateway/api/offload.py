"""Request bodies read and converted off the event loop, within the item
bound (docs/configuration.md#request-bounds).

Reading a request walks all of it: the nesting check, the field checks,
the conversion of Responses items or Messages blocks into chat messages.
For a body near `max_body_bytes` of tiny items that is seconds of Python,
so it runs in a worker thread, which gives the interpreter back to the
event loop every few milliseconds (`sys.getswitchinterval`): `/health`
and every stream keep answering. At most `CONVERTING_AT_ONCE` requests of
an app convert at once, so that the loop never waits behind a crowd of
threads for the interpreter. A body under `INLINE_BODY_BYTES` converts on
the loop instead (under a millisecond even of tiny items), since handing
it to a thread and back costs more than converting it (docs/benchmarks.md,
"Server side"). The item bound (`max_input_items`, the requested model's)
is checked first, right after the JSON parse, before anything walks the
items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from fastapi import Request

from gateway.api.request import ItemBound
from gateway.upstream.serving import entry_for

CONVERTING_AT_ONCE = 2
INLINE_BODY_BYTES = 8 << 10

_Converted = TypeVar("_Converted")


def item_bound(request: Request, field: str) -> ItemBound:
    """The bound on `field`'s items: the requested model's `max_input_items`,
    the server's for a model no entry serves."""
    backends = request.app.state.backends
    server = request.app.state.config.server

    def limit(model: object) -> int:
        found = entry_for(backends, model) if isinstance(model, str) else None
        return found[1].max_input_items if found is not None else server.max_input_items

    return ItemBound(field, limit)


def converting_limiter() -> anyio.CapacityLimiter:
    """An app's limit on conversions at once (made with the app)."""
    return anyio.CapacityLimiter(CONVERTING_AT_ONCE)


async def converted(
    request: Request, size: int | None, convert: Callable[..., _Converted], *args: object
) -> _Converted:
    """`convert(*args)` of a body of `size` bytes (None: of unknown size),
    run in a worker thread of the app's unless the body is small."""
    if size is not None and size < INLINE_BODY_BYTES:
        return convert(*args)
    return await anyio.to_thread.run_sync(convert, *args, limiter=request.app.state.converting)
