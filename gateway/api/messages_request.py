"""An Anthropic Messages request as the one internal chat-completions request.

- `system` (a string or text blocks) and every `role: "system"` message
  become one leading system message, in order: chat templates want the
  system prompt first and once. A leading `x-anthropic-billing-header` block
  (Claude Code's, different on every request) is dropped, so the prompt
  prefix stays cacheable. `cache_control` is ignored wherever it sits.
- Text blocks are joined with newlines; `image` blocks become `image_url`
  parts, so a backend that takes images gets them and one that doesn't
  answers its own 400.
- `document` blocks become their text (documents.py: a PDF's text, a
  text file's); one given by URL or file id is a 400 (nothing is fetched).
- `tool_use` blocks become the assistant's `tool_calls`, `tool_result`
  blocks `tool` messages (an `is_error` result's text is prefixed
  `Error: `; its images are placed for the model by plan/tool_images.py,
  its documents read as text), an id the gateway encoded restored to the
  model's own (`functions.NAME:N`: messages_ids.py); `thinking` blocks come
  back as the turn's `reasoning_content`, `redacted_thinking` ones are
  dropped.
- `tools` are functions; a `defer_loading` tool is not offered until a
  `tool_reference` block in a tool result loads it (Claude Code's
  ToolSearch), from that turn on; nor is a server tool (`type` other than
  `custom`), which only Anthropic runs. `tool_choice` `auto` / `any` /
  `tool` / `none` map to `auto` / `required` / a named function / `none`,
  and `disable_parallel_tool_use` to `parallel_tool_calls: false`. The
  chat request goes through chat's check (request.py), its errors naming
  the offered tools as sent (`tools[1].input_schema...`).
- `output_config.format` (`{"type": "json_schema", "schema": …}`) becomes
  chat's `response_format`, the backend's JSON-schema constraint.
- `thinking.type` `enabled` / `disabled` sets the chat-template thinking
  switches; `adaptive` leaves them to the template, unless an
  `output_config.effort` is given, which becomes `reasoning_effort` (`max`
  is sent as `high`).
- `stop_sequences`, `max_tokens`, `temperature`, `top_p` and `top_k` keep
  their meaning; `context_management` edits are applied to the history
  (messages_context.py); `metadata`, `thinking.budget_tokens` and every
  unknown field are accepted and not forwarded.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.documents import document_text
from gateway.api.messages_context import edited
from gateway.api.messages_ids import decode_tool_use_id
from gateway.api.request import ChatRequest, ItemBound, checked_payload, read_checked
from gateway.api.tool_schema import ToolPlaces
from gateway.ops.errors import ApiError

logger = logging.getLogger("parsegate.messages")

BILLING_HEADER = "x-anthropic-billing-header"
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "high", "xhigh": "high"}
_SWITCHES = ("enable_thinking", "thinking")


class MessagesRequest(BaseModel):
    """The fields of a Messages request the gateway relies on; others are ignored."""

    model_config = ConfigDict(strict=True)

    model: str
    max_tokens: int = Field(ge=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    system: str | list[dict[str, Any]] | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None


class CountTokensRequest(MessagesRequest):
    """A count_tokens request: a Messages request without `max_tokens`."""

    # widened on purpose: the request is read as a MessagesRequest, and chat_payload leaves out a None max_tokens
    max_tokens: int | None = Field(default=None, ge=1)  # type: ignore[assignment]


def read_messages_request(
    raw: bytes, checked: type[MessagesRequest] = MessagesRequest, items: ItemBound | None = None
) -> tuple[MessagesRequest, dict, ChatRequest, list[dict] | None]:
    """The checked Messages request, its internal chat payload (its
    `context_management` edits applied: messages_context.py), that payload
    checked as the chat route checks it, and the edits applied (None when
    it asked for none)."""
    fields, request = read_checked(raw, checked, items)
    messages, applied = edited(fields, request.messages)
    if applied is not None:
        request = request.model_copy(update={"messages": messages})
    payload = chat_payload(request)
    loaded = loaded_tools(request.messages)
    offered = [f"tools[{index}]" for index, tool in enumerate(request.tools or ()) if _offered(tool, loaded)]
    checked_chat = checked_payload(payload, ToolPlaces(offered, schema="input_schema", name="name"))
    return request, payload, checked_chat, applied


def chat_payload(request: MessagesRequest) -> dict:
    """The chat-completions request for a checked Messages request."""
    system_parts = _system_texts(request.system)
    messages: list[dict] = []
    for position, message in enumerate(request.messages):
        role = message.get("role")
        if role == "system":
            system_parts.append(_text_of(message.get("content"), f"messages[{position}]"))
        elif role == "user":
            messages += _user_messages(message.get("content"), position)
        elif role == "assistant":
            messages.append(_assistant_message(message.get("content"), position))
        else:
            raise ApiError(400, f'messages[{position}].role must be "user", "assistant" or "system"', param="messages")
    if system_parts:
        messages.insert(0, {"role": "system", "content": "\n\n".join(system_parts)})
    payload: dict = {"model": request.model, "messages": messages}
    if request.max_tokens is not None:
        payload["max_tokens"] = request.max_tokens
    if request.stream:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    for key in ("temperature", "top_p", "top_k"):
        value = getattr(request, key)
        if value is not None:
            payload[key] = value
    if request.stop_sequences:
        payload["stop"] = request.stop_sequences
    payload.update(_tool_fields(request.tools, request.tool_choice, loaded_tools(request.messages)))
    payload.update(_thinking_fields(request.thinking, request.output_config))
    payload.update(_format_fields(request.output_config))
    return payload


def _system_texts(system: str | list[dict] | None) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system] if system else []
    blocks = list(system)
    if blocks and _is_billing_header(blocks[0]):
        blocks = blocks[1:]
    return [text for text in (_block_text(block, "system") for block in blocks) if text]


def _is_billing_header(block: object) -> bool:
    return isinstance(block, dict) and str(block.get("text", "")).startswith(BILLING_HEADER)


def _block_text(block: object, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
        raise ApiError(400, f"{where}: expected text blocks", param=where.split("[")[0])
    return block["text"]


def _text_of(content: object, where: str) -> str:
    """A string, or text blocks joined with newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(block, f"{where}.content[{i}]") for i, block in enumerate(content))
    raise ApiError(400, f"{where}.content must be a string or a list of content blocks", param="messages")


def _blocks(content: object, position: int) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(block, dict) for block in content):
        return content
    raise ApiError(400, f"messages[{position}].content must be a string or a list of content blocks", param="messages")


def _user_messages(content: object, position: int) -> list[dict]:
    """Tool results first (as `tool` messages, answering the previous turn's
    calls), then the user's own text and images, if any."""
    results: list[dict] = []
    parts: list[dict] = []
    for i, block in enumerate(_blocks(content, position)):
        kind = block.get("type")
        where = f"messages[{position}].content[{i}]"
        if kind == "tool_result":
            results.append(_tool_message(block, where))
        elif kind == "text":
            parts.append({"type": "text", "text": _block_text(block, where)})
        elif kind == "image":
            parts.append(_image_part(block, where))
        elif kind == "document":
            parts.append({"type": "text", "text": _document_text(block, where)})
        else:
            raise ApiError(
                400, f"{where}: content block type {kind!r} is not supported in a user turn", param="messages"
            )
    if not parts:
        return results
    if all(part["type"] == "text" for part in parts):
        return [*results, {"role": "user", "content": "\n".join(part["text"] for part in parts)}]
    return [*results, {"role": "user", "content": parts}]


def _tool_message(block: dict, where: str) -> dict:
    """A `tool_result` as a `tool` message: its text, documents read as
    text (documents.py) and images kept as parts, placed for the model
    that serves the turn (plan/tool_images.py)."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise ApiError(400, f"{where}.tool_use_id must be a string", param="messages")
    content = block.get("content", "")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else _result_parts(content, where)
    if block.get("is_error") is True:
        opening = parts[0]["text"] if parts and parts[0]["type"] == "text" else None
        parts = [{"type": "text", "text": f"Error: {opening or ''}"}, *parts[0 if opening is None else 1 :]]
    if all(part["type"] == "text" for part in parts):
        content = "\n".join(part["text"] for part in parts)
    else:
        content = parts
    return {"role": "tool", "tool_call_id": decode_tool_use_id(call_id), "content": content}


def _result_parts(content: object, where: str) -> list[dict]:
    if not isinstance(content, list):
        raise ApiError(400, f"{where}.content must be a string or a list of content blocks", param="messages")
    parts: list[dict] = []
    for i, block in enumerate(content):
        place = f"{where}.content[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image":
            parts.append(_image_part(block, place))
        elif kind == "document":
            parts.append({"type": "text", "text": _document_text(block, place)})
        elif kind == "tool_reference" and isinstance(block.get("tool_name"), str):
            parts.append({"type": "text", "text": f"Tool {block['tool_name']} loaded: it is among the tools now."})
        else:
            parts.append({"type": "text", "text": _block_text(block, place)})
    return parts


def _document_text(block: dict, where: str) -> str:
    """A `document` block's text: a PDF's or a text file's (documents.py),
    a `content` source's text blocks; a URL or a file id is a 400."""
    given = block.get("source")
    source: dict = given if isinstance(given, dict) else {}
    title = block.get("title") if isinstance(block.get("title"), str) else None
    kind = source.get("type")
    if kind == "base64" and isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str):
        return document_text(source["media_type"], source["data"], title)
    if kind == "text" and isinstance(source.get("data"), str):
        return document_text(str(source.get("media_type") or "text/plain"), source["data"], title, encoded=False)
    if kind == "content":
        return _text_of(source.get("content"), f"{where}.source")
    message = "must be a base64, text or content document source (this gateway keeps and fetches no files)"
    raise ApiError(400, f"{where}.source {message}", param="messages")


def _image_part(block: dict, where: str) -> dict:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        url: object = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif isinstance(source, dict) and source.get("type") == "url":
        url = source.get("url")
    else:
        raise ApiError(400, f"{where}.source must be a base64 or url image source", param="messages")
    return {"type": "image_url", "image_url": {"url": url}}


def _assistant_message(content: object, position: int) -> dict:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict] = []
    for i, block in enumerate(_blocks(content, position)):
        kind = block.get("type")
        where = f"messages[{position}].content[{i}]"
        if kind == "text":
            texts.append(_block_text(block, where))
        elif kind == "thinking":
            reasoning.append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            calls.append(_tool_call(block, where))
        elif kind != "redacted_thinking":
            raise ApiError(
                400, f"{where}: content block type {kind!r} is not supported in an assistant turn", param="messages"
            )
    message: dict = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_call(block: dict, where: str) -> dict:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ApiError(400, f"{where}: a tool_use block needs a string id and name", param="messages")
    arguments = orjson.dumps(block.get("input") or {}).decode()
    return {"id": decode_tool_use_id(call_id), "type": "function", "function": {"name": name, "arguments": arguments}}


def loaded_tools(messages: list[dict]) -> frozenset[str]:
    """The deferred tools the conversation has loaded: those a `tool_reference`
    block in a tool result names (Claude Code's ToolSearch answers with them)."""
    return frozenset(
        reference["tool_name"]
        for message in messages
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("content"), list)
        for reference in block["content"]
        if isinstance(reference, dict)
        and reference.get("type") == "tool_reference"
        and isinstance(reference.get("tool_name"), str)
    )


def _offered(tool: dict, loaded: frozenset[str]) -> bool:
    """A client tool the model may call now: not a server tool, and not
    deferred (`defer_loading`) unless a tool result has loaded it."""
    deferred = tool.get("defer_loading") is True and tool.get("name") not in loaded
    return tool.get("type", "custom") == "custom" and not deferred


def _tool_fields(tools: list[dict] | None, choice: dict | None, loaded: frozenset[str]) -> dict:
    functions = []
    for i, tool in enumerate(tools or ()):
        if not isinstance(tool.get("name"), str):
            raise ApiError(400, f"tools[{i}].name must be a string", param="tools")
        if tool.get("type", "custom") != "custom":
            logger.info("messages: server tool %r dropped: only Anthropic runs it", tool["name"] or tool.get("type"))
        if _offered(tool, loaded):
            schema = tool.get("input_schema")
            function = {"name": tool["name"], "parameters": {"type": "object"} if schema in (None, {}) else schema}
            if isinstance(tool.get("description"), str):
                function["description"] = tool["description"]
            functions.append({"type": "function", "function": function})
    fields: dict = {"tools": functions} if functions else {}
    if choice is None:
        return fields
    kind = choice.get("type")
    if kind == "auto":
        fields["tool_choice"] = "auto"
    elif kind == "any":
        if not functions:  # said in the client's words, before the chat check says "required"
            raise ApiError(400, 'tool_choice is {"type": "any"} but the request offers no tools', param="tool_choice")
        fields["tool_choice"] = "required"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        fields["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif kind == "none":
        fields["tool_choice"] = "none"
    else:
        message = 'tool_choice must be {"type": "auto" | "any" | "none"} or {"type": "tool", "name": ...}'
        raise ApiError(400, message, param="tool_choice")
    if choice.get("disable_parallel_tool_use") is True:
        fields["parallel_tool_calls"] = False
    return fields


def _format_fields(output_config: dict | None) -> dict:
    """Chat's `response_format` for a structured-output request
    (`output_config.format`, Anthropic's JSON outputs)."""
    given = (output_config or {}).get("format")
    if given is None:
        return {}
    if not isinstance(given, dict) or given.get("type") != "json_schema" or not isinstance(given.get("schema"), dict):
        message = 'output_config.format must be {"type": "json_schema", "schema": {...}}'
        raise ApiError(400, message, param="output_config.format")
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": given["schema"]}}}


def _thinking_fields(thinking: dict | None, output_config: dict | None) -> dict:
    kind = (thinking or {}).get("type")
    effort = (output_config or {}).get("effort")
    effort = _EFFORTS.get(effort) if isinstance(effort, str) else None
    on = {"enabled": True, "disabled": False}.get(kind) if isinstance(kind, str) else None
    if on is None and effort is not None:
        on = True
    fields: dict = {}
    if on is not None:
        fields["chat_template_kwargs"] = dict.fromkeys(_SWITCHES, on)
    if on and effort is not None:
        fields["reasoning_effort"] = effort
    return fields
