"""Non-streamed completions: the same reader as streaming, fed the whole
message at once (one `read` and `finish`), so the two paths cannot drift."""

from __future__ import annotations

import time

from gateway.api.chunks import completion_id, finish_reason
from gateway.backend.backend_parsed import read_message
from gateway.backend.parse_plan import ParsePlan
from gateway.ops.observe import RequestRecord


def _message(upstream: dict, plan: ParsePlan, record: RequestRecord) -> dict:
    result, outcomes = read_message(upstream, plan)
    record.parsed(outcomes)
    calls = [
        {"id": plan.call_id(name, index), "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(result.tool_calls)
    ]
    content = result.content or (None if calls else "")
    message: dict[str, object] = {"role": "assistant", "content": content}
    for key in plan.reasoning_keys:
        message[key] = result.reasoning_content
    if calls:
        message["tool_calls"] = calls
    return message


def _choice(choice: dict, plan: ParsePlan, record: RequestRecord) -> dict:
    upstream = choice.get("message")
    message = _message(upstream if isinstance(upstream, dict) else {}, plan, record)
    made_call = "tool_calls" in message
    return {
        "index": choice.get("index", 0),
        "message": message,
        "logprobs": choice.get("logprobs"),
        "finish_reason": finish_reason(made_call, choice.get("finish_reason")),
        **(plan.tool_choice.unmet(made_call) or {}),
    }


def completion(answer: dict, plan: ParsePlan, model: str, record: RequestRecord) -> dict:
    """The client's `chat.completion` for the backend's `answer`; its usage
    and parse outcomes go to `record`."""
    body = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [_choice(choice, plan, record) for choice in answer["choices"] if isinstance(choice, dict)],
    }
    if answer.get("usage") is not None:
        body["usage"] = answer["usage"]
        record.usage(answer["usage"])
    return body
