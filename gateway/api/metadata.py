"""`metadata` as OpenAI's API bounds it, on a Responses request and a
conversation: at most 16 pairs, keys of at most 64 characters, string
values of at most 512 (https://platform.openai.com/docs/api-reference/responses/create#responses-create-metadata).
It is echoed and stored, so unbounded it would be a way to store anything."""

from __future__ import annotations

from gateway.ops.errors import ApiError

MAX_PAIRS = 16
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 512


def checked_metadata(value: object) -> dict[str, str]:
    """`value` as metadata ({} for null); 400 naming `metadata` unless it is within the bounds."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(text, str) for text in value.values()):
        raise ApiError(400, "metadata must be an object of string values", param="metadata")
    if len(value) > MAX_PAIRS:
        raise ApiError(400, f"metadata may hold at most {MAX_PAIRS} pairs, got {len(value)}", param="metadata")
    for key, text in value.items():
        if len(key) > MAX_KEY_CHARS:
            message = f"metadata keys may be at most {MAX_KEY_CHARS} characters, got {len(key)}"
            raise ApiError(400, message, param="metadata")
        if len(text) > MAX_VALUE_CHARS:
            message = f"metadata[{key!r}] may be at most {MAX_VALUE_CHARS} characters, got {len(text)}"
            raise ApiError(400, message, param="metadata")
    return value
