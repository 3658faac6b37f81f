"""Non-streamed chat completions: a turn's answer as a `chat.completion`.
The turn reads the whole message as the streamed deltas would be read, so
the two paths cannot drift."""

from __future__ import annotations

import time

from gateway.api.chunks import completion_id
from gateway.api.turns import Answer, ChoiceAnswer, Turn


def _choice(choice: ChoiceAnswer, turn: Turn) -> dict:
    plan, result = turn.plan, choice.result
    calls = [
        {"id": plan.call_id(name, index), "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(result.tool_calls)
    ]
    message: dict[str, object] = {"role": "assistant", "content": result.content or (None if calls else "")}
    for key in plan.reasoning_keys:
        message[key] = result.reasoning_content
    if calls:
        message["tool_calls"] = calls
    return {
        "index": choice.index,
        "message": message,
        "logprobs": choice.logprobs,
        "finish_reason": choice.finish_reason,
        **(choice.unmet or {}),
    }


def completion(answer: Answer, turn: Turn) -> dict:
    """The client's `chat.completion` for the turn's `answer`."""
    body = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "choices": [_choice(choice, turn) for choice in answer.choices],
    }
    if answer.usage is not None:
        body["usage"] = answer.usage
    return body
