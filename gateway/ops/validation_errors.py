"""pydantic validation errors as users read them: one line, each reason
after the key path it concerns (`models[0].backend.url: ...`), for config
files and request bodies alike."""

from __future__ import annotations

from pydantic import ValidationError


def describe_errors(error: ValidationError) -> str:
    """pydantic errors as `key.path: reason`, joined on one line."""
    parts = []
    for item in error.errors(include_url=False):
        where = key_path(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return " | ".join(parts)


def key_path(loc: tuple[str | int, ...]) -> str:
    """A pydantic error location as `models[0].backend.url`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
