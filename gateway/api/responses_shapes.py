"""The Responses API's objects, as the streamed and the whole reply share
them: ids, complete output items, usage and the `response` object."""

from __future__ import annotations

import time
from dataclasses import dataclass

import orjson

from gateway.api.compaction_seal import Seal
from gateway.api.responses_request import OUTPUT_LOGPROBS, REASONING_SEALED, ResponsesRequest, Tools
from gateway.ops.ids import UNGUESSABLE, new_id
from parsers.core.json_close import closed_json

# chat finish reasons that leave a response incomplete, and why
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


@dataclass(frozen=True)
class Included:
    """What a request's `include` adds to its output: each reasoning item's
    text sealed as its `encrypted_content` (with `reasoning_seal`), and
    each output_text part's `logprobs` (asked of the backend)."""

    reasoning_seal: Seal | None = None
    logprobs: bool = False


NOTHING_INCLUDED = Included()


def included(request: ResponsesRequest, seal: Seal) -> Included:
    asked = request.include or []
    return Included(seal if REASONING_SEALED in asked else None, OUTPUT_LOGPROBS in asked)


def reasoning_item(item_id: str, text: str, status: str = "completed", seal: Seal | None = None) -> dict:
    """A reasoning item, its text as the summary (none while `in_progress`);
    `incomplete` when the end of output cut it, as a message or a call.
    With `seal`, its text sealed as its `encrypted_content`, which a later
    request sends back to replay it (compaction_seal.py)."""
    summary = [{"type": "summary_text", "text": text}] if status != "in_progress" else []
    item = {"id": item_id, "type": "reasoning", "status": status, "summary": summary}
    if seal is not None and status != "in_progress":
        item["encrypted_content"] = seal.seal(text, kind="reasoning")
    return item


def output_text(text: str, logprobs: list[dict] | None = None) -> dict:
    """An output_text part; with `logprobs` (asked with `include`), those of its tokens."""
    part: dict = {"type": "output_text", "text": text, "annotations": []}
    if logprobs is not None:
        part["logprobs"] = logprobs
    return part


def token_logprobs(chat_logprobs: object) -> list[dict]:
    """The token entries of a backend's chat `logprobs` (`{"content": [...]}`),
    in the shape output_text parts take them; none from a malformed one."""
    tokens = chat_logprobs.get("content") if isinstance(chat_logprobs, dict) else None
    return [token for token in tokens if isinstance(token, dict)] if isinstance(tokens, list) else []


def message_item(item_id: str, text: str, status: str = "completed", logprobs: list[dict] | None = None) -> dict:
    """The assistant's message: `in_progress` (no content yet), `completed`,
    or `incomplete` with the text written before the end of output cut it
    (https://platform.openai.com/docs/api-reference/responses/object)."""
    content = [output_text(text, logprobs)] if status != "in_progress" else []
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def call_item(item_id: str, call_id: str, name: str, arguments: str, tools: Tools, status: str = "completed") -> dict:
    """A call of the tool the model knows as `name`: a `custom_tool_call`
    with its `input` for a custom tool, else a `function_call` (by its own
    name and namespace, for a tool that came from a namespace). An
    `incomplete` call (the end of output cut it) has the arguments written
    so far; a custom one, the input inside them."""
    if name in tools.custom:
        written = closed_json(arguments) if status == "incomplete" else arguments
        return {
            "id": item_id,
            "type": "custom_tool_call",
            "status": status,
            "call_id": call_id,
            "name": name,
            "input": custom_input(written),
        }
    item = {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": name}
    item["arguments"] = arguments
    if name in tools.namespaced:
        item["name"], item["namespace"] = tools.namespaced[name]
    return item


def custom_input(arguments: str) -> str:
    """A custom tool's free-form input from the function arguments the
    model wrote (`{"input": "..."}`); text that is not such an object is
    taken as the input itself."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        return value["input"]
    return arguments


def usage(chat_usage: dict | None) -> dict | None:
    """Chat usage in the Responses API's names."""
    if not isinstance(chat_usage, dict):
        return None
    prompt = chat_usage.get("prompt_tokens") or 0
    completion = chat_usage.get("completion_tokens") or 0
    cached = (chat_usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (chat_usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": chat_usage.get("total_tokens") or prompt + completion,
    }


class ResponseObject:
    """The `response` object of one request, in any of its states."""

    def __init__(
        self, request: ResponsesRequest, raw: dict, stored: bool = False, conversation: str | None = None
    ) -> None:
        self.id = new_id("resp_", UNGUESSABLE)
        self._fields = {
            "id": self.id,
            "object": "response",
            "created_at": int(time.time()),
            "background": request.background is True,
            "model": request.model,
            "status": "in_progress",
            "error": None,
            "incomplete_details": None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "metadata": raw.get("metadata") or {},  # checked: responses_request.py
            "output": [],
            "parallel_tool_calls": raw.get("parallel_tool_calls") is not False,
            "reasoning": request.reasoning,
            "store": stored,
            "previous_response_id": request.previous_response_id,
            "conversation": {"id": conversation} if conversation is not None else None,
            "temperature": raw.get("temperature"),
            "text": request.text or {"format": {"type": "text"}},
            "tool_choice": request.tool_choice or "auto",
            "tools": request.tools or [],
            "top_p": raw.get("top_p"),
            "usage": None,
        }

    def in_progress(self) -> dict:
        return self._fields

    def queued(self) -> dict:
        """A background response as it is created, before its run starts (responses_background.py)."""
        return {**self._fields, "status": "queued"}

    def finished(self, output: list[dict], finish_reason: str | None, chat_usage: dict | None) -> dict:
        """The response at its end: completed, or incomplete (cut at
        max_output_tokens, or filtered)."""
        incomplete = _INCOMPLETE.get(finish_reason or "")
        return {
            **self._fields,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "output": output,
            "usage": usage(chat_usage),
        }

    def interrupted(self, output: list[dict], chat_usage: dict | None) -> dict:
        """The response of a stream its client left before the end: what was written, incomplete."""
        return {
            **self._fields,
            "status": "incomplete",
            "incomplete_details": {"reason": "client_disconnected"},
            "output": output,
            "usage": usage(chat_usage),
        }

    def stopped(self, cut: dict, shutdown: bool) -> dict:
        """A background response stopped before its end, holding what was
        written (`cut`, as `interrupted` made it): `cancelled`, or
        `failed` when the gateway shut down."""
        if not shutdown:
            return {**cut, "status": "cancelled", "incomplete_details": None}
        failure = {"code": "server_shutdown", "message": "the gateway shut down before this response was finished"}
        return {**cut, "status": "failed", "incomplete_details": None, "error": failure}

    def failed(self, output: list[dict], error: dict, chat_usage: dict | None) -> dict:
        details = error.get("error")
        if not isinstance(details, dict):
            details = {}
        failure = {"code": str(details.get("code") or "server_error"), "message": str(details.get("message") or "")}
        return {**self._fields, "status": "failed", "error": failure, "output": output, "usage": usage(chat_usage)}
