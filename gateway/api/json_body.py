"""A JSON response from a payload, encoded once with orjson."""

from __future__ import annotations

import orjson
from fastapi.responses import Response


def json_response(payload: dict) -> Response:
    return Response(orjson.dumps(payload), media_type="application/json")
