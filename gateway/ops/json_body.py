"""Every JSON response parsegate answers with, encoded once with orjson:
the surfaces' answers and every error shape."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from starlette.responses import Response


def json_response(payload: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json", headers=headers)
