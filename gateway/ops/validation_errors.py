"""Errors as users read them: pydantic validation errors on one line, each
reason after the key path it concerns (`models[0].backend.url: ...`), for
config files and request bodies alike; and an unknown name with the
closest known one (`did you mean`), for config keys and parser names."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import ValidationError


def describe_errors(error: ValidationError) -> str:
    """pydantic errors as `key.path: reason`, joined on one line."""
    return " | ".join(described(loc, message) for loc, message in error_items(error))


def error_items(error: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """Each pydantic error as (location, reason)."""
    return [(item["loc"], item["msg"].removeprefix("Value error, ")) for item in error.errors(include_url=False)]


def described(loc: tuple[str | int, ...], message: str) -> str:
    """One error as `key.path: reason`."""
    where = key_path(loc)
    return f"{where}: {message}" if where else message


def key_path(loc: tuple[str | int, ...]) -> str:
    """A pydantic error location as `models[0].backend.url`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def unknown_name(what: str, name: str, allowed: Sequence[str], allowed_label: str = "allowed") -> str:
    """`unknown WHAT 'name' (did you mean 'x'?); allowed: a, b`, the guess
    being the closest allowed name (difflib), left out when none is close."""
    close = difflib.get_close_matches(name, allowed, n=1)
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {name!r}{guess}; {allowed_label}: {', '.join(allowed)}"
