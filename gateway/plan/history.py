"""Reasoning in the conversation history, as backends read it.

Clients send an earlier assistant turn's reasoning back under either name:
`reasoning_content` (SGLang, DeepSeek, most clients) or `reasoning` (vLLM
since it renamed the field, OpenRouter-style clients). Chat templates read
`reasoning_content` (Qwen3, GLM, Kimi K2, MiniMax M2; llama.cpp and SGLang
pass it to them), vLLM reads `reasoning`. So an assistant message carrying
one name is sent upstream carrying both, with the same text. Everything
else in the history (tool call ids, `tool_call_id`s) is sent as it came.
"""

from __future__ import annotations

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
