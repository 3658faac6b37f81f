"""A Responses API request (`POST /v1/responses`) as the internal
chat-completions payload, after the stored items it continues
(responses_state.py).

Input items become chat messages: consecutive assistant items (reasoning,
message, calls) fold into one assistant message, leading system and
developer messages into one system message. Reasoning items are replayed
as the assistant's `reasoning_content`. Tools: `function` as it is;
`custom` as a function with one string parameter `input`; `namespace`
flattened (a name another tool already has gets its namespace as
prefix); hosted tools dropped with a log line. `Tools` remembers what each
offered name was, so the reply's calls go back out in their own kind, and
where the request held it, so that chat's check (request.py), which the
converted request goes through, names the field as sent. A content part
the conversion would drop (a file, an image without a URL) is a 400.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.api.metadata import checked_metadata
from gateway.api.request import ChatRequest, checked_payload
from gateway.api.tool_schema import ToolPlaces
from gateway.ops.errors import ApiError
from gateway.ops.validation_errors import describe_errors, key_path

log = logging.getLogger("parsegate.responses")

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
_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text", "refusal")
_ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call")


class ResponsesRequest(BaseModel):
    """The fields of a Responses request the gateway acts on; others
    (`include`, `prompt_cache_key`, `metadata`, `client_metadata`…) are
    accepted and not used."""

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


@dataclass
class Tools:
    """The tools offered to the model, by the name it sees: which are
    custom (their call is a `custom_tool_call`), and which came from a
    namespace (name and namespace to call them by)."""

    chat: list[dict] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # where the request holds each of `chat`
    custom: set[str] = field(default_factory=set)
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add_function(self, tool: dict, path: str, namespace: str | None = None) -> None:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ApiError(400, f"{path}.name must be a non-empty string", param=f"{path}.name")
        offered = name if not self._has(name) else f"{namespace}__{name}" if namespace else name
        parameters = tool.get("parameters")
        if parameters is None or parameters == {}:
            parameters = {"type": "object", "properties": {}}
        function: dict = {"name": offered, "parameters": parameters}
        if isinstance(tool.get("description"), str) and tool["description"]:
            function["description"] = tool["description"]
        if namespace:
            self.namespaced[offered] = (name, namespace)
        self._add(function, path)

    def add_custom(self, tool: dict, path: str) -> None:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ApiError(400, f"{path}.name must be a non-empty string", param=f"{path}.name")
        description = tool["description"] if isinstance(tool.get("description"), str) else ""
        grammar = tool.get("format")
        if not isinstance(grammar, dict):
            grammar = {}
        if grammar.get("type") == "grammar" and grammar.get("definition"):
            description += f"\n\nThe input is free-form text in this {grammar.get('syntax', '')} grammar:\n"
            description += str(grammar["definition"])
        parameters = {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
            "required": ["input"],
        }
        self.custom.add(name)
        self._add({"name": name, "description": description.strip(), "parameters": parameters}, path)

    def keep(self, names: set[str]) -> None:
        """Offer only the tools of these names."""
        kept = [
            (tool, path) for tool, path in zip(self.chat, self.paths, strict=True) if tool["function"]["name"] in names
        ]
        self.chat, self.paths = [tool for tool, _ in kept], [path for _, path in kept]

    def places(self) -> ToolPlaces:
        """Where the request holds each offered tool, for the chat request's check."""
        return ToolPlaces(self.paths, schema="parameters", name="name")

    def _add(self, function: dict, path: str) -> None:
        self.chat.append({"type": "function", "function": function})
        self.paths.append(path)

    def _has(self, name: str) -> bool:
        return any(tool["function"]["name"] == name for tool in self.chat)


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _tools(tools: list[dict]) -> Tools:
    offered = Tools()
    for index, tool in enumerate(tools):
        kind = tool.get("type")
        if kind == "function":
            offered.add_function(tool, f"tools[{index}]")
        elif kind == "custom":
            offered.add_custom(tool, f"tools[{index}]")
        elif kind == "namespace":
            for place, inner in enumerate(_list(tool.get("tools"))):
                if isinstance(inner, dict) and inner.get("type", "function") == "function":
                    offered.add_function(inner, f"tools[{index}].tools[{place}]", namespace=str(tool.get("name") or ""))
        else:
            log.info("responses: dropped the hosted tool %r, which this gateway cannot run", kind)
    return offered


def _tool_choice(choice: object, tools: Tools) -> object:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict):
        kind = choice.get("type")
        if kind in ("function", "custom") and isinstance(choice.get("name"), str):
            return {"type": "function", "function": {"name": choice["name"]}}
        if kind == "allowed_tools":
            return _allowed_tools(choice, tools)
    raise ApiError(
        400, f"tool_choice {orjson.dumps(choice).decode()} names no tool this gateway serves", param="tool_choice"
    )


def _allowed_tools(choice: dict, tools: Tools) -> str:
    """Offer only the tools an `allowed_tools` choice names (a hosted tool
    it lists has no name here); its mode is the chat tool choice."""
    listed = choice.get("tools")
    if not isinstance(listed, list) or not all(isinstance(tool, dict) for tool in listed):
        raise ApiError(400, "tool_choice.tools must be an array of tool objects", param="tool_choice.tools")
    for index, tool in enumerate(listed):
        if "name" in tool and not isinstance(tool["name"], str):
            raise ApiError(
                400, f"tool_choice.tools[{index}].name must be a string", param=f"tool_choice.tools[{index}].name"
            )
    mode = choice.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise ApiError(400, 'tool_choice.mode must be "auto" or "required"', param="tool_choice.mode")
    tools.keep({tool["name"] for tool in listed if "name" in tool})
    if not tools.chat:
        raise ApiError(400, "tool_choice.tools allows none of the tools in tools", param="tool_choice.tools")
    return mode


def _text(content: object) -> str:
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part.get("text") or ""
        for part in content
        if isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)
    )


def _content(content: object) -> str | list[dict]:
    """A user message's content (its parts checked): text, or text and
    image parts in chat's shape."""
    if not isinstance(content, list) or not any(part["type"] == "input_image" for part in content):
        return _text(content)
    parts: list[dict] = []
    for part in content:
        if part["type"] == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            parts.append({"type": "text", "text": part.get("text") or ""})
    return parts


def _check_parts(content: object, where: str, role: object) -> None:
    """400 naming a content part the conversion would drop: a file (this
    gateway keeps no files, and passes on only text and image URLs), an
    image given by `file_id` instead of `image_url` or outside a user
    message (as chat, which takes images from the user only), or a part
    whose type it does not know."""
    for index, part in enumerate(_list(content)):
        kind = part.get("type") if isinstance(part, dict) else None
        place = f"{where}.content[{index}]"
        if kind == "input_file":
            message = "input_file parts are not supported (this gateway keeps no files): send the file's text"
        elif kind == "input_image" and not (isinstance(part.get("image_url"), str) and part["image_url"]):
            message = "an input_image needs an image_url (this gateway keeps no files, so file_id is not supported)"
        elif kind == "input_image" and role != "user":
            message = "input_image parts are taken in user messages only"
        elif kind not in (*_TEXT_PARTS, "input_image"):
            message = f"content parts of type {kind!r} are not supported"
        else:
            continue
        raise ApiError(400, f"{place}: {message}", param=place)


class _Conversation:
    """Chat messages built item by item."""

    def __init__(self, instructions: str | None) -> None:
        self.messages: list[dict] = []
        self.system: list[str] = [instructions] if instructions else []

    def add(self, item: dict, where: str) -> None:
        kind = item.get("type", "message")
        if kind == "message":
            self._message(item, where)
        elif kind in _ASSISTANT_ITEMS:
            self._assistant_item(kind, item)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._flush_system()
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            self.messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""), "content": text})
        else:
            raise ApiError(400, f"{where}: items of type {kind!r} are not supported by this gateway", param=where)

    def _message(self, item: dict, where: str) -> None:
        role = item.get("role")
        _check_parts(item.get("content"), where, role)
        if role in ("system", "developer"):
            text = _text(item.get("content"))
            if not self.messages:
                self.system.append(text)
            else:
                self.messages.append({"role": "system", "content": text})
        elif role == "user":
            self._flush_system()
            self.messages.append({"role": "user", "content": _content(item.get("content"))})
        elif role == "assistant":
            message = self._assistant()
            message["content"] = (message.get("content") or "") + _text(item.get("content"))
        else:
            raise ApiError(400, f"{where}: messages with role {role!r} are not supported", param=where)

    def _assistant_item(self, kind: str, item: dict) -> None:
        message = self._assistant()
        if kind == "reasoning":
            text = _text(item.get("content")) or "\n".join(
                str(part.get("text") or "") for part in _list(item.get("summary")) if isinstance(part, dict)
            )
            if text:
                message["reasoning_content"] = (message.get("reasoning_content") or "") + text
            return
        if kind == "function_call":
            arguments = item.get("arguments")
            arguments = arguments if isinstance(arguments, str) else orjson.dumps(arguments or {}).decode()
        else:
            arguments = orjson.dumps({"input": item.get("input") or ""}).decode()
        call: dict[str, object] = {"id": str(item.get("call_id") or ""), "type": "function"}
        call["function"] = {"name": str(item.get("name") or ""), "arguments": arguments}
        message.setdefault("tool_calls", []).append(call)

    def _assistant(self) -> dict:
        """The assistant message being built, or a new one."""
        self._flush_system()
        last = self.messages[-1] if self.messages else None
        if last is None or last["role"] != "assistant" or "tool_calls" in last:
            last = {"role": "assistant", "content": None}
            self.messages.append(last)
        return last

    def finished(self) -> list[dict]:
        """The chat messages, the system message included."""
        self._flush_system()
        return self.messages

    def _flush_system(self) -> None:
        if self.system:
            self.messages.insert(0, {"role": "system", "content": "\n\n".join(self.system)})
            self.system = []


def check_item_fields(items: list[dict], field: str) -> None:
    """400 naming the first item whose `type` or `id` is there but not a
    string (both become stored keys: docs/state.md); an `id` of null is
    taken as none given."""
    for index, item in enumerate(items):
        for key in ("type", "id"):
            if key in item and not isinstance(item[key], str) and not (key == "id" and item[key] is None):
                place = f"{field}[{index}].{key}"
                raise ApiError(400, f"{place} must be a string, got {type(item[key]).__name__}", param=place)


def check_continuable(items: list[dict], field: str) -> None:
    """`check_item_fields`, and 400 naming the first item a Responses
    request could not continue (as `chat_request` checks its input), so a
    conversation never holds an item that fails every later request."""
    check_item_fields(items, field)
    conversation = _Conversation(None)
    for index, item in enumerate(items):
        conversation.add(item, f"{field}[{index}]")


def responses_fields(raw: dict) -> ResponsesRequest:
    """The Responses request's fields, checked (400 naming the first wrong one)."""
    try:
        request = ResponsesRequest.model_validate(raw)
    except ValidationError as error:
        param = key_path(error.errors(include_url=False)[0]["loc"]) or None
        raise ApiError(400, describe_errors(error), param=param) from None
    if isinstance(request.input, list):
        check_item_fields(request.input, "input")
    checked_metadata(raw.get("metadata"))
    if request.background:
        raise ApiError(
            400, "background: true is not supported: this gateway answers while you wait", param="background"
        )
    return request


def chat_request(request: ResponsesRequest, raw: dict, history: list[dict]) -> tuple[dict, ChatRequest, Tools]:
    """The chat payload (checked) for a Responses request (its fields and
    JSON object), continuing the stored `history` items, and the tools offered."""
    conversation = _Conversation(request.instructions)
    for index, item in enumerate(history):
        conversation.add(item, f"previous item {index}")
    if isinstance(request.input, str):
        conversation.add({"type": "message", "role": "user", "content": request.input}, "input")
    else:
        for index, item in enumerate(request.input):
            conversation.add(item, f"input[{index}]")
    payload: dict = {"model": request.model, "messages": conversation.finished()}
    tools = _tools(request.tools or [])
    choice = _tool_choice(request.tool_choice, tools)
    if tools.chat:
        payload["tools"] = tools.chat
    if choice is not None and (tools.chat or choice not in ("auto", "none")):
        payload["tool_choice"] = choice  # required or named with no tools: the check below answers 400
    for name in _SAMPLING + _CHAT_EXTENSIONS:
        if raw.get(name) is not None:
            payload[name] = raw[name]
    if request.max_output_tokens is not None:
        payload["max_tokens"] = request.max_output_tokens
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
