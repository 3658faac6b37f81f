"""What the fields of a backend's choice say, beyond its text: the turn's
finish reason, the request's stop string it stopped on, and whether a
field that holds text (`finish_reason`, a message's or delta's `content`)
holds text or null, as the OpenAI API has it. Anything else in one is a
malformed chunk, or an invalid answer (turns.py)."""

from __future__ import annotations


def text_or_null(value: object) -> bool:
    return value is None or type(value) is str


def finish_reason(made_call: bool, upstream_reason: str | None) -> str | None:
    """A turn that stopped after tool calls finished with `tool_calls`;
    any other reason (`length` included) stays as the backend said."""
    return "tool_calls" if made_call and upstream_reason == "stop" else upstream_reason


def request_stops(payload: dict) -> tuple[str, ...]:
    """The stop strings of a chat payload (`stop`: a string or a list)."""
    stop = payload.get("stop")
    if isinstance(stop, str):
        return (stop,)
    return tuple(item for item in stop if isinstance(item, str)) if isinstance(stop, list) else ()


def matched_stop(choice: dict, reason: str | None, stops: tuple[str, ...]) -> str | None:
    """The request's stop string the backend stopped on: vLLM names it in
    the choice's `stop_reason`, SGLang in `matched_stop` (either may hold
    a stop token's id instead, which is no stop string)."""
    if reason != "stop" or not stops:
        return None
    for key in ("stop_reason", "matched_stop"):
        value = choice.get(key)
        if isinstance(value, str) and value in stops:
            return value
    return None
