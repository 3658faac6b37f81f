"""What the gateway changes in a client's chat request before it goes
upstream, besides the plan's own fields (parse_plan.py).

The thinking switch: `reasoning_effort` and `reasoning: {"effort",
"enabled"}` as chat-template thinking switches (docs/api.md, "Request
extensions", as SGLang serves them).

An effort (top level, else `reasoning.effort`) turns thinking on, except
`"none"` and Hunyuan's `"no_think"`, which turn it off; without an effort,
`reasoning.enabled` says it. The switch is set as both
`chat_template_kwargs.thinking` and `enable_thinking` (templates read one
or the other), unless the client's `chat_template_kwargs` already has
that key. A model whose template reads a switch of its own hears it there
too (Seed-OSS: off is `thinking_budget: 0`; GigaChat 3.5: `reasoning`;
MiniMax M3: on is `thinking_mode: "enabled"`), from the effort or else
from a `thinking` / `enable_thinking` the request sets (Anthropic's
`thinking.type`), again unless the client set that key. The reasoning
parser's start state follows the result, like any template switch.

The model's `extra_body`: fields the config adds to every upstream
request. The request wins: `extra_body` fills in what the client did not
send, and a mapping on both sides (say `chat_template_kwargs`) is merged
key by key, the client's keys winning again. So a config can set backend
defaults (`top_k`, `chat_template_kwargs: {enable_thinking: false}`) that
a client may still override per request.

The history's reasoning, as backends read it: clients send an earlier
assistant turn's reasoning back under either name: `reasoning_content` (SGLang, DeepSeek, most clients) or `reasoning` (vLLM
since it renamed the field, OpenRouter-style clients). Chat templates read
`reasoning_content` (Qwen3, GLM, Kimi K2, MiniMax M2; llama.cpp and SGLang
pass it to them), vLLM reads `reasoning`. So an assistant message carrying
one name is sent upstream carrying both, with the same text. Everything
else in the history (tool call ids, `tool_call_id`s) is sent as it came.
"""

from __future__ import annotations

from typing import Any

from parsers import reasoning_format
from parsers.stages.reasoning import EFFORTS_OFF, ReasoningFormat

_SWITCHES = ("thinking", "enable_thinking")


def _thinking_on(payload: dict) -> bool | None:
    reasoning = payload.get("reasoning") or {}
    effort = payload.get("reasoning_effort") or reasoning.get("effort")
    if effort is not None:
        return effort not in EFFORTS_OFF
    enabled = reasoning.get("enabled")
    return enabled if isinstance(enabled, bool) else None


def _switch_said(kwargs: dict) -> bool | None:
    """What the request's own `thinking` / `enable_thinking` say, if either is a boolean."""
    return next((kwargs[key] for key in _SWITCHES if isinstance(kwargs.get(key), bool)), None)


def with_thinking_switch(payload: dict, reasoning: str | ReasoningFormat | None = None) -> dict:
    """The client's request with the thinking switches its reasoning effort
    implies set in `chat_template_kwargs`, and those of the model's
    `reasoning` format that are not the two shared ones (unchanged when
    nothing says whether to think). Applied before the model's
    `extra_body`, so the client's switch wins."""
    on = _thinking_on(payload)
    kwargs = dict(payload.get("chat_template_kwargs") or {})
    switches: dict[str, object] = dict.fromkeys(_SWITCHES, on) if on is not None else {}
    said = on if on is not None else _switch_said(kwargs)
    if said is not None and reasoning is not None:
        own = reasoning_format(reasoning).switch_values(said)
        switches |= {key: value for key, value in own.items() if key not in _SWITCHES}
    if all(key in kwargs for key in switches):
        return payload
    for key, value in switches.items():
        kwargs.setdefault(key, value)
    return {**payload, "chat_template_kwargs": kwargs}


_NAMES = ("reasoning_content", "reasoning")


def _with_both_names(message: dict) -> dict | None:
    """The message with its reasoning under both names, or None if it
    needs no change."""
    if message.get("role") != "assistant":
        return None
    present = [name for name in _NAMES if isinstance(message.get(name), str)]
    if len(present) != 1:
        return None
    text = message[present[0]]
    return {**message, "reasoning_content": text, "reasoning": text}


def history_fields(messages: list[dict]) -> dict:
    """`{"messages": [...]}` if any message needs its reasoning under both
    names, else `{}` (the client's messages go up untouched)."""
    changed = [_with_both_names(message) for message in messages]
    if not any(changed):
        return {}
    return {"messages": [new or old for new, old in zip(changed, messages, strict=True)]}


def with_extra_body(payload: dict[str, Any], extra_body: dict[str, Any]) -> dict[str, Any]:
    """`payload` with `extra_body` merged under it (the payload is not changed)."""
    if not extra_body:
        return payload
    merged = dict(extra_body)
    for key, value in payload.items():
        default = merged.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            merged[key] = with_extra_body(value, default)
        else:
            merged[key] = value
    return merged
