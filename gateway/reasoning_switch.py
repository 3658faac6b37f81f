"""`reasoning_effort` and `reasoning: {"effort", "enabled"}` as chat-template
thinking switches (FORMATS.md §3.5, as SGLang serves them).

An effort (top level, else `reasoning.effort`) turns thinking on, except
`"none"`, which turns it off; without an effort, `reasoning.enabled` says
it. The switch is set as both `chat_template_kwargs.thinking` and
`enable_thinking` (templates read one or the other), unless the client's
`chat_template_kwargs` already has that key. The reasoning parser's start
state follows the result, like any template switch.
"""

from __future__ import annotations

_SWITCHES = ("thinking", "enable_thinking")


def _thinking_on(payload: dict) -> bool | None:
    reasoning = payload.get("reasoning") or {}
    effort = payload.get("reasoning_effort") or reasoning.get("effort")
    if effort is not None:
        return effort != "none"
    enabled = reasoning.get("enabled")
    return enabled if isinstance(enabled, bool) else None


def switched_template_kwargs(payload: dict) -> dict | None:
    """The request's `chat_template_kwargs` with the thinking switches its
    reasoning effort implies, or None when it sets no effort."""
    on = _thinking_on(payload)
    if on is None:
        return None
    kwargs = dict(payload.get("chat_template_kwargs") or {})
    for key in _SWITCHES:
        kwargs.setdefault(key, on)
    return kwargs
