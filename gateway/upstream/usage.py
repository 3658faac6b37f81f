"""The backend's `usage` object, checked where it is read (`turns.py`, once
per answer or usage chunk), and its reasoning tokens filled in.

A backend's usage is OpenAI's: counts (`prompt_tokens`, `completion_tokens`,
`total_tokens`) and `*_tokens_details` objects of counts
(https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage).
A field of another type (`"prompt_tokens": "a"`, `"prompt_tokens_details":
"n/a"`, a count that is negative or past 2**53) is dropped as if absent, and
usage that is no object at all is no usage; the first malformed usage of
each model is logged (a warning) so the operator sees a backend that sends
it. Every surface then reads counts that are integers.

Reasoning tokens: a raw-text backend does not know which of its tokens were
reasoning (parsegate separates it), so unless it reports
`completion_tokens_details.reasoning_tokens` itself, the count is estimated
as `completion_tokens` × the share of the generated characters that were
reasoning (docs/agents.md, "Usage").
"""

from __future__ import annotations

import logging

log = logging.getLogger("parsegate.usage")

MAX_COUNT = 1 << 53  # larger counts are no token counts (and overflow a client's JSON numbers)
_MAX_LOGGED_MODELS = 100  # models whose malformed usage was logged; past this, no more lines
_logged: set[str] = set()


def _is_count(value: object) -> bool:
    return type(value) is int and 0 <= value < MAX_COUNT


def _checked_details(value: object) -> tuple[object, bool]:
    """A `*_details` object with its malformed counts dropped, and whether
    anything was malformed."""
    if value is None:
        return None, False
    if not isinstance(value, dict):
        return None, True
    kept = {key: count for key, count in value.items() if not key.endswith("_tokens") or _is_count(count)}
    return kept, len(kept) != len(value)


def checked_usage(usage: object, model: str) -> dict | None:
    """The backend's `usage` for `model` with every malformed field dropped;
    None when absent or not an object."""
    if usage is None:
        return None
    malformed = not isinstance(usage, dict)
    checked: dict | None = None
    if isinstance(usage, dict):
        checked = {}
        for key, value in usage.items():
            if key.endswith("_details"):
                value, bad = _checked_details(value)
                malformed |= bad
                if value is None and bad:
                    continue
            elif key.endswith("_tokens") and not _is_count(value):
                malformed = True
                continue
            checked[key] = value
    if malformed and model not in _logged and len(_logged) < _MAX_LOGGED_MODELS:
        _logged.add(model)
        log.warning(
            "the backend for model %r sent a usage object with fields of unexpected types (%s); "
            "they are read as absent (logged once per model)",
            model,
            _described(usage),
        )
    return checked


def _described(usage: object) -> str:
    """What was malformed, by key and type (never the values: they are the backend's)."""
    if not isinstance(usage, dict):
        return f"usage is a {type(usage).__name__}"
    return ", ".join(f"{key}: {type(value).__name__}" for key, value in usage.items() if isinstance(key, str))[:300]


def with_reasoning_tokens(usage: dict, reasoning_chars: int, generated_chars: int) -> dict:
    """`usage` with `completion_tokens_details.reasoning_tokens` filled in:
    the backend's own count when it gave one above zero, else (when the
    turn had reasoning) the estimate from the characters' shares."""
    details = usage.get("completion_tokens_details")
    details = details if isinstance(details, dict) else {}
    completion = usage.get("completion_tokens")
    if details.get("reasoning_tokens") or not reasoning_chars or not generated_chars or completion is None:
        return usage
    estimate = round(completion * min(reasoning_chars, generated_chars) / generated_chars)
    return {**usage, "completion_tokens_details": {**details, "reasoning_tokens": estimate}}
