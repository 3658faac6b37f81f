"""`reasoning_effort` and `reasoning: {"effort", "enabled"}` as chat-template
thinking switches (docs/api.md, "Request extensions", as SGLang serves them).

An effort (top level, else `reasoning.effort`) turns thinking on, except
`"none"` and Hunyuan's `"no_think"`, which turn it off; without an effort,
`reasoning.enabled` says it. The switch is set as both `chat_template_kwargs.thinking` and
`enable_thinking` (templates read one or the other), unless the client's
`chat_template_kwargs` already has that key. The reasoning parser's start
state follows the result, like any template switch.
"""

from __future__ import annotations

from parsers.stages.reasoning import EFFORTS_OFF

_SWITCHES = ("thinking", "enable_thinking")


def _thinking_on(payload: dict) -> bool | None:
    reasoning = payload.get("reasoning") or {}
    effort = payload.get("reasoning_effort") or reasoning.get("effort")
    if effort is not None:
        return effort not in EFFORTS_OFF
    enabled = reasoning.get("enabled")
    return enabled if isinstance(enabled, bool) else None


def with_thinking_switch(payload: dict) -> dict:
    """The client's request with the thinking switches its reasoning effort
    implies set in `chat_template_kwargs` (unchanged without an effort).
    Applied before the model's `extra_body`, so the client's switch wins."""
    on = _thinking_on(payload)
    if on is None:
        return payload
    kwargs = dict(payload.get("chat_template_kwargs") or {})
    for key in _SWITCHES:
        kwargs.setdefault(key, on)
    return {**payload, "chat_template_kwargs": kwargs}
