"""Anthropic's context editing (`context_management.edits`), applied in
the gateway to a Messages request's history before it becomes the chat
request, and reported as the reply's `context_management.applied_edits`
(https://platform.claude.com/docs/en/build-with-claude/context-editing):

- `clear_tool_uses_20250919`: once the prompt passes `trigger` (input
  tokens, default 100,000; or `tool_uses`), the oldest tool results are
  replaced by a placeholder, all but the last `keep` tool uses (default 3)
  and those of `exclude_tools`; `clear_tool_inputs` (true, or a list of
  tool names) empties their calls' inputs too. With `clear_at_least`, an
  edit that would clear fewer input tokens is not applied.
- `clear_thinking_20251015`: the thinking blocks of all but the last
  `keep` assistant turns that have any (default 1; `"all"` keeps every one).

Tokens are estimated, one per four characters of the blocks' JSON (as
count_tokens estimates without a tokenizer). Edits of other types are
accepted and not applied. The client's history is not changed: the edits
hold for this request only, as Anthropic's do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import orjson

from gateway.ops.errors import ApiError
from gateway.upstream.token_count import CHARS_PER_TOKEN

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
CLEARED_RESULT = "[This tool result was cleared from the context to save space.]"
_DEFAULT_TRIGGER = {"type": "input_tokens", "value": 100_000}
_DEFAULT_KEEP = {"type": "tool_uses", "value": 3}
_THINKING = ("thinking", "redacted_thinking")


def _tokens(value: object) -> int:
    return math.ceil(len(orjson.dumps(value)) / CHARS_PER_TOKEN)


@dataclass
class _ToolUse:
    block: dict  # the assistant's tool_use block
    result: dict | None  # the tool_result block that answers it


def edited(raw: dict, messages: list[dict]) -> tuple[list[dict], list[dict] | None]:
    """The messages with the request's `context_management` edits applied
    (copies of what they change), and the edits applied (None when the
    request asked for none)."""
    context = raw.get("context_management")
    if context is None:
        return messages, None
    edits = context.get("edits") if isinstance(context, dict) else None
    if not isinstance(edits, list) or not all(isinstance(edit, dict) for edit in edits):
        raise ApiError(400, "context_management.edits must be a list of edits", param="context_management.edits")
    messages = [
        {**message, "content": _copied(message["content"])} if "content" in message else message for message in messages
    ]
    applied: list[dict] = []
    for index, edit in enumerate(edits):
        where = f"context_management.edits[{index}]"
        if edit.get("type") == CLEAR_TOOL_USES:
            result = _clear_tool_uses(raw, messages, edit, where)
        elif edit.get("type") == CLEAR_THINKING:
            result = _clear_thinking(messages, edit, where)
        else:
            continue
        if result is not None:
            applied.append(result)
    return messages, applied


def _copied(content: object) -> object:
    return (
        [dict(block) if isinstance(block, dict) else block for block in content]
        if isinstance(content, list)
        else content
    )


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _amount(edit: dict, key: str, default: dict | None, kinds: tuple[str, ...], where: str) -> tuple[str, int] | None:
    """An edit's `{type, value}` option (400 naming it when malformed)."""
    option = edit[key] if edit.get(key) is not None else default  # null: the default, as left out
    if option is None:
        return None
    value = option.get("value") if isinstance(option, dict) else None
    if not (isinstance(option, dict) and option.get("type") in kinds and type(value) is int and value >= 0):
        message = f'{where}.{key} must be {{"type": {" or ".join(map(repr, kinds))}, "value": a whole number >= 0}}'
        raise ApiError(400, message, param=f"{where}.{key}")
    return option["type"], value


def _names(edit: dict, key: str, where: str) -> list[str]:
    names = edit.get(key) or []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ApiError(400, f"{where}.{key} must be a list of tool names", param=f"{where}.{key}")
    return names


def _tool_uses(messages: list[dict]) -> list[_ToolUse]:
    """The history's tool uses, oldest first, each with its result."""
    uses: dict[str, _ToolUse] = {}
    for message in messages:
        for block in _blocks(message):
            if message.get("role") == "assistant" and block.get("type") == "tool_use":
                uses[str(block.get("id"))] = _ToolUse(block, None)
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in uses:
                uses[str(block.get("tool_use_id"))].result = block
    return list(uses.values())


def _clear_tool_uses(raw: dict, messages: list[dict], edit: dict, where: str) -> dict | None:
    trigger = _amount(edit, "trigger", _DEFAULT_TRIGGER, ("input_tokens", "tool_uses"), where)
    keep = _amount(edit, "keep", _DEFAULT_KEEP, ("tool_uses",), where)
    at_least = _amount(edit, "clear_at_least", None, ("input_tokens",), where)
    excluded = set(_names(edit, "exclude_tools", where))
    inputs = edit.get("clear_tool_inputs", False)
    if not isinstance(inputs, bool):
        inputs = set(_names(edit, "clear_tool_inputs", where))
    uses = _tool_uses(messages)
    assert trigger is not None and keep is not None
    size = len(uses) if trigger[0] == "tool_uses" else _tokens([raw.get("system"), raw.get("tools"), messages])
    if size <= trigger[1]:
        return None
    kept = len(uses) - keep[1]
    chosen = [use for use in uses[: max(kept, 0)] if use.block.get("name") not in excluded]
    changes: list[tuple[dict, str, object]] = []
    cleared, count = 0, 0
    for use in chosen:
        before = len(changes)
        if use.result is not None and use.result.get("content") != CLEARED_RESULT:
            cleared += _tokens(use.result.get("content")) - _tokens(CLEARED_RESULT)
            changes.append((use.result, "content", CLEARED_RESULT))
        if (inputs is True or (isinstance(inputs, set) and use.block.get("name") in inputs)) and use.block.get("input"):
            cleared += _tokens(use.block.get("input")) - _tokens({})
            changes.append((use.block, "input", {}))
        count += len(changes) > before
    if not changes or (at_least is not None and cleared < at_least[1]):
        return None
    for block, key, value in changes:
        block[key] = value
    return {"type": CLEAR_TOOL_USES, "cleared_tool_uses": count, "cleared_input_tokens": max(cleared, 0)}


def _clear_thinking(messages: list[dict], edit: dict, where: str) -> dict | None:
    keep = edit.get("keep", {"type": "thinking_turns", "value": 1})
    if keep == "all":
        return None
    kept = _amount({"keep": keep}, "keep", None, ("thinking_turns",), where)
    assert kept is not None
    thinking = [
        message
        for message in messages
        if message.get("role") == "assistant" and any(block.get("type") in _THINKING for block in _blocks(message))
    ]
    cleared_turns = thinking[: max(len(thinking) - kept[1], 0)]
    if not cleared_turns:
        return None
    cleared = 0
    for message in cleared_turns:
        cleared += sum(_tokens(block) for block in _blocks(message) if block.get("type") in _THINKING)
        message["content"] = [block for block in message["content"] if _kind(block) not in _THINKING]
    return {"type": CLEAR_THINKING, "cleared_thinking_turns": len(cleared_turns), "cleared_input_tokens": cleared}


def _kind(block: object) -> object:
    return block.get("type") if isinstance(block, dict) else None
