"""A Responses request's input items as chat messages.

Consecutive assistant items (reasoning, message, calls) fold into one
assistant message, leading system and developer messages into one system
message. Reasoning items are replayed as the assistant's
`reasoning_content` (their `encrypted_content` unsealed, where this
gateway sealed it; another's, such as OpenAI's, is opaque here, and the
item's text is replayed). Whatever the conversion would drop or could not
read is a 400 naming it: a content part it does not pass on (an image
without a URL, an image or file outside a user message or a tool's
output), a content or output that is neither text nor a list of parts, a
call or tool output without its `call_id`, a call without its `name`. A
file's text is read (documents.py); a tool output's images are placed for
the model that serves the turn (plan/tool_images.py). Items kept in a
conversation are checked here too (`check_continuable`), so that a
conversation never holds one that fails every later request.
"""

from __future__ import annotations

import re

import orjson

from gateway.api.compaction_seal import COMPACTION_TRIGGER, SEAL_PREFIX, Seal, expanded
from gateway.api.documents import data_url_document
from gateway.api.hosted_items import REPLAYED_ITEMS, replayed
from gateway.ops.errors import ApiError
from gateway.templates.chat_messages import text_key

_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text", "refusal")
_ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call")


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _text(content: object) -> str:
    """The text of a message's content (checked): a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    return "".join(_part_text(part) for part in _list(content) if part["type"] in _TEXT_PARTS)


def _part_text(part: dict) -> str:
    """A checked text part's text."""
    return part[text_key(part["type"])]


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _required_string(item: dict, key: str, where: str) -> str:
    """`item[key]`, which must be a string that is not empty (400 naming it)."""
    value = item.get(key)
    if not isinstance(value, str) or not value:
        place = f"{where}.{key}"
        raise ApiError(400, f"{place} must be a non-empty string, got {_kind(value)}", param=place)
    return value


def _check_content(content: object, where: str) -> None:
    """400 unless `content` is text or a list of content parts."""
    if not isinstance(content, str | list):
        message = f"{where} must be a string or a list of content parts, got {_kind(content)}"
        raise ApiError(400, message, param=where)


def _content(content: object) -> str | list[dict]:
    """A user message's or a tool output's content (its parts checked):
    text, or text and image parts in chat's shape; a file's text read
    (documents.py)."""
    if not isinstance(content, list) or not any(part["type"] in ("input_image", "input_file") for part in content):
        return _text(content)
    parts: list[dict] = []
    for part in content:
        if part["type"] == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        elif part["type"] == "input_file":
            parts.append({"type": "text", "text": _file_text(part)})
        else:
            parts.append({"type": "text", "text": _part_text(part)})
    if all(part["type"] == "text" for part in parts):
        return "".join(part["text"] for part in parts)
    return parts


def _file_text(part: dict) -> str:
    """A checked `input_file`'s text: its `file_data` read."""
    return data_url_document(part["file_data"], part.get("filename") if isinstance(part.get("filename"), str) else None)


def _check_parts(content: object, path: str, role: object) -> None:
    """400 naming a content part the conversion would drop or could not
    read: a text part whose text is not a string, a file (this
    gateway keeps no files, and passes on only text and image URLs), an
    image given by `file_id` instead of `image_url` or outside a user
    message (as chat, which takes images from the user only), or a part
    whose type it does not know."""
    for index, part in enumerate(_list(content)):
        kind = part.get("type") if isinstance(part, dict) else None
        place = f"{path}[{index}]"
        key = text_key(kind)
        if kind in _TEXT_PARTS and not isinstance(part.get(key), str):
            message = f"a {kind} part needs its {key} as a string"
        elif kind == "input_file" and role not in ("user", "tool"):
            message = "input_file parts are taken in user messages and tool outputs only"
        elif kind == "input_file" and not (isinstance(part.get("file_data"), str) and part["file_data"]):
            message = (
                "an input_file needs its file_data (this gateway keeps and fetches no files: no file_id or file_url)"
            )
        elif kind == "input_image" and not (isinstance(part.get("image_url"), str) and part["image_url"]):
            message = "an input_image needs an image_url (this gateway keeps no files, so file_id is not supported)"
        elif kind == "input_image" and role not in ("user", "tool"):
            message = "input_image parts are taken in user messages and tool outputs only"
        elif kind not in (*_TEXT_PARTS, "input_image", "input_file"):
            message = f"content parts of type {kind!r} are not supported"
        else:
            continue
        raise ApiError(400, f"{place}: {message}", param=place)


class ChatMessages:
    """Chat messages built item by item."""

    def __init__(self, instructions: str | None, seal: Seal) -> None:
        self.seal = seal
        self.messages: list[dict] = []
        self.system: list[str] = [instructions] if instructions else []
        self.added_tools: list[tuple[dict, str]] = []  # what `additional_tools` and tool search added, and where

    def add(self, item: dict, where: str, stored: bool = False) -> None:
        """Add one item (`stored`: read from the store, whose reasoning items
        keep their text, so that a sealed copy is not checked again, and a
        chain outlives a `seal_key` that changed)."""
        kind = item.get("type", "message")
        if kind == "message":
            self._message(item, where)
        elif kind in REPLAYED_ITEMS:
            if kind == "tool_search_output":
                self._add_tools(item, where)
            message = self._assistant()
            before = message.get("content") or ""
            separator = "\n" if before and not before.endswith("\n") else ""
            message["content"] = f"{before}{separator}{replayed(kind, item)}\n"  # a line of its own
        elif kind == "additional_tools":
            self._add_tools(item, where)
        elif kind == "compaction":
            self._flush_system()
            self.messages.append(expanded(self.seal, item, where, stored))
        elif kind == COMPACTION_TRIGGER and stored:  # a compaction asked for before: nothing to replay
            return
        elif kind in _ASSISTANT_ITEMS:
            trusted = stored and kind == "reasoning"
            self._assistant_item(kind, {**item, "encrypted_content": None} if trusted else item, where)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = _required_string(item, "call_id", where)
            output = item.get("output")
            _check_content(output, f"{where}.output")
            _check_parts(output, f"{where}.output", "tool")
            self._flush_system()
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": _content(output)})
        else:
            raise ApiError(400, f"{where}: items of type {kind!r} are not supported by this gateway", param=where)

    def _message(self, item: dict, where: str) -> None:
        role = item.get("role")
        _check_content(item.get("content"), f"{where}.content")
        _check_parts(item.get("content"), f"{where}.content", role)
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

    def _add_tools(self, item: dict, where: str) -> None:
        """The tools an item makes available from here on (400 unless a list of tools)."""
        tools = item.get("tools")
        if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
            raise ApiError(400, f"{where}.tools must be a list of tools", param=f"{where}.tools")
        self.added_tools += [(tool, f"{where}.tools[{index}]") for index, tool in enumerate(tools)]

    def _assistant_item(self, kind: str, item: dict, where: str) -> None:
        if kind == "reasoning":
            for key in ("content", "summary"):
                if item.get(key) is not None:
                    _check_content(item[key], f"{where}.{key}")
                    _check_parts(item[key], f"{where}.{key}", "assistant")
            sealed = item.get("encrypted_content")
            if sealed is not None and not (isinstance(sealed, str) and not sealed.startswith(SEAL_PREFIX)):
                text = self.seal.unseal(sealed, where, kind="reasoning")  # the reasoning as the model wrote it
            else:
                text = _text(item.get("content")) or "\n".join(
                    _part_text(part) for part in _list(item.get("summary")) if part["type"] in _TEXT_PARTS
                )
            if text:
                message = self._assistant()
                message["reasoning_content"] = (message.get("reasoning_content") or "") + text
            return
        call_id, name = _required_string(item, "call_id", where), _required_string(item, "name", where)
        if kind == "function_call":
            arguments = item.get("arguments")
            if not isinstance(arguments, str | dict):
                place = f"{where}.arguments"
                raise ApiError(400, f"{place} must be a JSON string, got {_kind(arguments)}", param=place)
            arguments = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
        else:
            given = item.get("input")
            if not isinstance(given, str):
                place = f"{where}.input"
                raise ApiError(400, f"{place} must be a string, got {_kind(given)}", param=place)
            arguments = orjson.dumps({"input": given}).decode()
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        self._assistant(calls=True).setdefault("tool_calls", []).append(call)

    def _assistant(self, calls: bool = False) -> dict:
        """The assistant message being built, or a new one: calls join the
        calls before them (a parallel round trip is one turn the model
        wrote), while text or reasoning after calls starts the next turn."""
        self._flush_system()
        last = self.messages[-1] if self.messages else None
        if last is None or last["role"] != "assistant" or ("tool_calls" in last and not calls):
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


MAX_ITEM_ID_CHARS = 256
_UNADDRESSABLE = re.compile(r"[/?#\s\x00-\x1f\x7f-\x9f]")  # a path's end, a query's or fragment's start; blanks


def check_item_fields(items: list[dict], field: str) -> None:
    """400 naming the first item whose `type` or `id` is there but not a
    string (both become stored keys: docs/state.md), or whose `id` could
    not be read or deleted through its route; an `id` of null is taken as
    none given."""
    for index, item in enumerate(items):
        for key in ("type", "id"):
            if key in item and not isinstance(item[key], str) and not (key == "id" and item[key] is None):
                place = f"{field}[{index}].{key}"
                raise ApiError(400, f"{place} must be a string, got {type(item[key]).__name__}", param=place)
        if isinstance(item.get("id"), str):
            _check_addressable(item["id"], f"{field}[{index}].id")


def _check_addressable(item_id: str, place: str) -> None:
    """400 naming `place` unless `item_id` can be a path segment of
    `/v1/conversations/{id}/items/{item_id}` as it is."""
    if not 0 < len(item_id) <= MAX_ITEM_ID_CHARS or item_id in (".", "..") or _UNADDRESSABLE.search(item_id):
        message = (
            f"{place} {item_id[:40]!r} cannot be an item id: an id has 1 to {MAX_ITEM_ID_CHARS} characters, "
            "none of them /, ?, #, whitespace or a control character, and is not . or ..; leave id out to have one made"
        )
        raise ApiError(400, message, param=place)


def check_continuable(items: list[dict], field: str, seal: Seal) -> None:
    """`check_item_fields`, and 400 naming the first item a Responses
    request could not continue (as `chat_request` checks its input), so a
    conversation never holds an item that fails every later request."""
    check_item_fields(items, field)
    conversation = ChatMessages(None, seal)
    for index, item in enumerate(items):
        conversation.add(item, f"{field}[{index}]")
