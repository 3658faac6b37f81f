"""DEMO backend: a built-in stand-in for a raw-text Qwen3 server.

DEMO ONLY — it runs no model. It lets the shipped config.yaml work on a
machine with no LLM server: `demo_answer` answers the gateway's
upstream `POST …/chat/completions` in-process (no port), writing
what a Qwen3 model served without parsers would write::

    <think>
    The user wrote: "What is the weather in Paris?" …
    </think>

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

The call goes to the first tool (or the one `tool_choice` names), its
required arguments filled from their JSON-schema types; without tools, or
after a tool result, the reply is plain text. Streamed replies go out as
OpenAI SSE chunks of 3–4 characters through a real byte stream.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator

import orjson

_CAPITALISED_WORD = re.compile(r"\b[A-Z][A-Za-z]+\b")
DemoAnswer = tuple[int, dict[str, str], AsyncIterator[bytes]]  # status, headers, body
_SCHEMA_PLACEHOLDERS = {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def _text_of(message: dict) -> str:
    """A message's text, whether `content` is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _last_user_text(messages: list) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message)
    return ""


def _chosen_tool(body: dict) -> dict | None:
    """The function the demo calls: the named tool_choice, else the first tool."""
    tools = [tool["function"] for tool in body.get("tools") or () if isinstance(tool, dict) and "function" in tool]
    choice = body.get("tool_choice")
    if not tools or choice == "none":
        return None
    if isinstance(choice, dict):
        wanted = choice.get("function", {}).get("name")
        return next((tool for tool in tools if tool.get("name") == wanted), tools[0])
    return tools[0]


def _demo_arguments(function: dict, user_text: str) -> dict:
    """Placeholder values for the function's required parameters, by type."""
    schema = function.get("parameters") or {}
    properties = schema.get("properties") or {}
    words = _CAPITALISED_WORD.findall(user_text)
    word = words[-1] if words else "example"
    arguments = {}
    for name in schema.get("required") or ():
        kind = (properties.get(name) or {}).get("type", "string")
        arguments[name] = word if kind == "string" else _SCHEMA_PLACEHOLDERS.get(kind, word)
    return arguments


def demo_reply(body: dict) -> str:
    """The raw model text the demo answers `body` with."""
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    user_text = _last_user_text(messages)
    tool = None if last.get("role") == "tool" else _chosen_tool(body)
    if last.get("role") == "tool":
        plan, answer = "A tool has answered; I will report its result.", f"The tool returned: {_text_of(last)}"
    elif tool is not None:
        call = json.dumps({"name": tool.get("name"), "arguments": _demo_arguments(tool, user_text)})
        plan, answer = f"I should call the {tool.get('name')} tool.", f"<tool_call>\n{call}\n</tool_call>"
    else:
        plan = "I will answer directly."
        answer = f"This is the parsegate demo backend (no model runs here). You said: {user_text}"
    kwargs = body.get("chat_template_kwargs") or {}
    if kwargs.get("enable_thinking") is False:
        return answer
    return f'<think>\nThe user wrote: "{user_text}". {plan}\n</think>\n\n{answer}'


def _pieces(text: str) -> list[str]:
    """The text cut into pieces of 3 and 4 characters, alternately."""
    pieces, start, size = [], 0, 3
    while start < len(text):
        pieces.append(text[start : start + size])
        start, size = start + size, 7 - size
    return pieces


def _usage(body: dict, completion_tokens: int) -> dict:
    prompt_tokens = sum(len(_text_of(m).split()) for m in body.get("messages") or () if isinstance(m, dict))
    total = prompt_tokens + completion_tokens
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": total}


async def _events(body: dict, text: str) -> AsyncIterator[bytes]:
    """The demo reply as OpenAI SSE events, yielded one event at a time."""
    head = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": int(time.time())}
    head["model"] = body.get("model")
    pieces = _pieces(text)
    for number, piece in enumerate(pieces):
        delta = {"role": "assistant", "content": piece} if number == 0 else {"content": piece}
        yield _event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        await asyncio.sleep(0)  # let the gateway forward each piece as it comes
    yield _event({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _event({**head, "choices": [], "usage": _usage(body, len(pieces))})
    yield b"data: [DONE]\n\n"


def _event(payload: dict) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


async def _whole(content: bytes) -> AsyncIterator[bytes]:
    yield content


def _json(status: int, answer: dict) -> DemoAnswer:
    return status, {"content-type": "application/json"}, _whole(orjson.dumps(answer))


async def demo_answer(method: str, url: str, body: bytes | None) -> DemoAnswer:
    """DEMO: the answer to a chat completion, as a raw-text Qwen3 server
    would give it: status, headers and body (transport.py sends it on)."""
    if method != "POST" or not url.endswith("/chat/completions") or body is None:
        return _json(404, {"error": {"message": "the demo backend serves only chat completions"}})
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _json(400, {"error": {"message": "request body is not JSON"}})
    text = demo_reply(request)
    if request.get("stream"):
        return 200, {"content-type": "text/event-stream"}, _events(request, text)
    completion = {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": _usage(request, len(_pieces(text))),
    }
    return _json(200, completion)
