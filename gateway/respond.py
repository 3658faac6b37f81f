"""Non-streamed completions: the same pipeline as streaming, fed the whole
message at once (one `feed` and `finish`), so the two paths cannot drift."""

from __future__ import annotations

import time

from gateway.chunks import completion_id, finish_reason
from gateway.observe import RequestRecord
from gateway.request import ParsePlan
from parsers import ParseResult


def _message(text: str, plan: ParsePlan, record: RequestRecord) -> dict:
    pipeline = plan.pipeline()
    result = ParseResult()
    result.add(pipeline.feed(text))
    result.add(pipeline.finish())
    record.parsed(pipeline.outcomes)
    calls = [
        {"id": plan.call_id(name, index), "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(result.tool_calls)
    ]
    content = result.content or (None if calls else "")
    message = {"role": "assistant", "content": content, "reasoning_content": result.reasoning_content}
    if calls:
        message["tool_calls"] = calls
    return message


def _choice(choice: dict, plan: ParsePlan, record: RequestRecord) -> dict:
    text = (choice.get("message") or {}).get("content")
    message = _message(text if isinstance(text, str) else "", plan, record)
    return {
        "index": choice.get("index", 0),
        "message": message,
        "logprobs": choice.get("logprobs"),
        "finish_reason": finish_reason("tool_calls" in message, choice.get("finish_reason")),
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
