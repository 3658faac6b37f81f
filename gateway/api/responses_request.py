"""A Responses API request (`POST /v1/responses`) as the internal
chat-completions payload, after the stored items it continues
(responses_state.py).

Its input items become chat messages in responses_items.py, its tools
in responses_tools.py; the converted request goes through chat's check
(request.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.api.compaction_seal import Seal, compacted_from
from gateway.api.metadata import checked_metadata
from gateway.api.request import ChatRequest, ItemBound, checked_payload, invalid_request, read_object
from gateway.api.responses_items import ChatMessages, check_item_fields
from gateway.api.responses_tools import Tools, chat_tool_choice, offered_tools
from gateway.ops.errors import ApiError

# fields of a Responses request passed on to the backend under the same name
_SAMPLING = ("temperature", "top_p", "parallel_tool_calls")
# chat extensions a client may add (the SDKs' extra_body), passed on as they are
_CHAT_EXTENSIONS = (
    "chat_template_kwargs",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "separate_reasoning",
    "stream_reasoning",
)
# `include` values acted on (https://platform.openai.com/docs/api-reference/responses/create#responses-create-include)
REASONING_SEALED = "reasoning.encrypted_content"
OUTPUT_LOGPROBS = "message.output_text.logprobs"


class ResponsesRequest(BaseModel):
    """The fields of a Responses request the gateway acts on; others
    (`prompt_cache_key`, `metadata`, `client_metadata`…) are accepted and
    not used, as are `include` values other than responses_shapes.py's."""

    model_config = ConfigDict(strict=True)

    model: str
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    store: bool | None = None
    previous_response_id: str | None = None
    conversation: Any = None
    background: bool | None = None
    max_output_tokens: int | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    include: list[str] | None = None


def responses_fields(raw: dict) -> ResponsesRequest:
    """The Responses request's fields, checked (400 naming the first wrong one)."""
    try:
        request = ResponsesRequest.model_validate(raw)
    except ValidationError as error:
        raise invalid_request(error) from None
    if isinstance(request.input, list):
        check_item_fields(request.input, "input")
    checked_metadata(raw.get("metadata"))
    if request.background and request.store is False:  # a background response is polled from the store
        raise ApiError(400, "background: true needs store: true (the default)", param="background")
    return request


def read_responses_fields(body: bytes, items: ItemBound) -> tuple[dict, ResponsesRequest]:
    """A Responses request's body read: its JSON object, and its fields checked."""
    raw = read_object(body, items)
    return raw, responses_fields(raw)


def chat_request(
    request: ResponsesRequest, raw: dict, history: list[dict], seal: Seal
) -> tuple[dict, ChatRequest, Tools]:
    """The chat payload (checked) for a Responses request (its fields and
    JSON object), continuing the stored `history` items (`compaction` items
    unsealed with `seal`), and the tools offered."""
    conversation = ChatMessages(request.instructions, seal)
    start = compacted_from(history)
    for index, item in enumerate(history[start:], start):
        conversation.add(item, f"previous item {index}", stored=True)
    if isinstance(request.input, str):
        conversation.add({"type": "message", "role": "user", "content": request.input}, "input")
    else:
        for index, item in enumerate(request.input):
            conversation.add(item, f"input[{index}]")
    payload: dict = {"model": request.model, "messages": conversation.finished()}
    tools = offered_tools(request.tools or [], conversation.added_tools)
    choice = chat_tool_choice(request.tool_choice, tools)
    if tools.chat:
        payload["tools"] = tools.chat
    if choice is not None and (tools.chat or choice not in ("auto", "none")):
        payload["tool_choice"] = choice  # required or named with no tools: the check below answers 400
    for name in _SAMPLING + _CHAT_EXTENSIONS:
        if raw.get(name) is not None:
            payload[name] = raw[name]
    if request.max_output_tokens is not None:
        payload["max_tokens"] = request.max_output_tokens
    if OUTPUT_LOGPROBS in (request.include or []):
        payload["logprobs"] = True
        if raw.get("top_logprobs") is not None:
            payload["top_logprobs"] = raw["top_logprobs"]
    effort = (request.reasoning or {}).get("effort")
    if isinstance(effort, str):
        payload["reasoning_effort"] = effort
    response_format = _response_format((request.text or {}).get("format"))
    if response_format is not None:
        payload["response_format"] = response_format
    if request.stream:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    return payload, checked_payload(payload, tools.places()), tools


def _response_format(text_format: object) -> dict | None:
    if not isinstance(text_format, dict):
        return None
    if text_format.get("type") == "json_schema":
        schema = {key: text_format[key] for key in ("name", "schema", "strict", "description") if key in text_format}
        return {"type": "json_schema", "json_schema": schema}
    if text_format.get("type") == "json_object":
        return {"type": "json_object"}
    return None
