"""OpenAI chat messages turned into what chat templates read.

Two steps, as a request to vLLM meets transformers' renderer:

1. vLLM's serving layer (`entrypoints/chat_utils.py`): text content parts
   are joined with "\\n" (`text`, `input_text`, `output_text`, `refusal` and
   `thinking` parts; a part without text, and any non-text part, is
   skipped: parsegate sends text only), null content becomes
   "", a tool call's `arguments` string is parsed into a mapping (text that
   is not JSON becomes `{}`), an empty `tool_calls` list is dropped, and an
   assistant's reasoning is carried under both `reasoning_content` and
   `reasoning`.
2. transformers (`apply_chat_template`): keys whose value is null are
   dropped, and a message's reasoning is also put under `thinking` (gpt-oss
   reads it there) and `reasoning_content` (Qwen3, GLM, Kimi, MiniMax and
   most others read it there).

Keys the templates don't know (`name`, `tool_call_id`, `prefix`, …) are
kept as they came. The caller's messages are never changed in place.

Some templates (DeepSeek V3.1 and R1, functionary v3.2) concatenate
`arguments` as text and fail on a mapping; for them step 1 keeps each
`arguments` as the request sent it (`text_arguments`), as llama.cpp renders
a template that does not require object arguments (minja's
`requires_object_arguments`). `ChatTemplate.render` picks the form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

# A text part's type, and the key its text is under.
_TEXT_KEYS = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "refusal": "refusal",
    "thinking": "thinking",
}
TEXT_PART_TYPES = frozenset(_TEXT_KEYS)


def text_key(part_type: object) -> str:
    """The key a text part of `part_type` holds its text under (`text` but for `refusal` and `thinking`)."""
    return _TEXT_KEYS.get(part_type, "text") if isinstance(part_type, str) else "text"


# The names a message's reasoning may come under, the first one found wins
# (transformers' order).
_REASONING_NAMES = ("reasoning_content", "thinking", "reasoning")


def template_messages(messages: Iterable[Mapping[str, Any]], *, text_arguments: bool = False) -> list[dict[str, Any]]:
    """The messages as a chat template sees them (both steps above); with
    `text_arguments`, tool-call arguments stay JSON text."""
    return [_aliased(_without_nulls(_served(message, text_arguments))) for message in messages]


def _served(message: Mapping[str, Any], text_arguments: bool) -> dict[str, Any]:
    """Step 1: one message as vLLM hands it to the renderer."""
    served = dict(message)
    served["content"] = _content_text(message.get("content"))
    if message.get("role") == "assistant":
        tool_calls = message.get("tool_calls")
        if isinstance(tool_calls, list):
            if tool_calls:
                served["tool_calls"] = [
                    _text_call(call) if text_arguments else _parsed_call(call) for call in tool_calls
                ]
            else:
                del served["tool_calls"]
        reasoning = _reasoning(message)
        if reasoning is not None:
            served["reasoning"] = reasoning
            served["reasoning_content"] = reasoning
    return served


def _content_text(content: Any) -> Any:
    """Text parts joined with newlines; a string (or anything else that is
    not a list) as it came, null as ""."""
    if content is None:
        return ""
    if not isinstance(content, list):
        return content
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_KEYS:
            text = part.get(_TEXT_KEYS[part["type"]])
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def _parsed_call(call: Any) -> Any:
    """A tool call whose `function.arguments` is a mapping (or whatever JSON
    value the string held), `{}` where it was not JSON."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    function = dict(call["function"])
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments)
        except ValueError:
            function["arguments"] = {}
    elif not isinstance(arguments, (Mapping, list)):
        function["arguments"] = {}
    return {**call, "function": function}


def _text_call(call: Any) -> Any:
    """A tool call whose `function.arguments` is JSON text: the request's
    string as it came, anything else written as JSON."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    arguments = call["function"].get("arguments")
    if isinstance(arguments, str):
        return call
    text = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
    return {**call, "function": {**call["function"], "arguments": text}}


def _reasoning(message: Mapping[str, Any]) -> str | None:
    for name in ("reasoning_content", "reasoning"):
        if isinstance(message.get(name), str):
            return message[name]
    return None


def _without_nulls(message: dict[str, Any]) -> dict[str, Any]:
    """Step 2a: many templates print "None" or fail on a null value but
    handle a missing key."""
    return {key: value for key, value in message.items() if value is not None}


def _aliased(message: dict[str, Any]) -> dict[str, Any]:
    """Step 2b: the reasoning also under `thinking` (kept first, so an
    existing `thinking` keeps its own value) and `reasoning_content`."""
    reasoning = next((message[name] for name in _REASONING_NAMES if message.get(name) is not None), None)
    if reasoning is None:
        return message
    return {"thinking": reasoning, **message, "reasoning_content": reasoning}


class RememberedMessages:
    """`template_messages`, remembering what it made for the messages of
    its last call: a call whose messages start with those same objects
    converts only the ones after them. A render worker holds one for its
    conversation (prompt_render.py), so an agent's next turn converts only
    what the turn added."""

    def __init__(self) -> None:
        self._sources: list[Mapping[str, Any]] = []
        self._made: dict[bool, list[dict[str, Any]]] = {}  # per arguments form, for a prefix of _sources

    def __call__(self, messages: Iterable[Mapping[str, Any]], *, text_arguments: bool = False) -> list[dict[str, Any]]:
        messages = list(messages)
        same = 0
        for new, old in zip(messages, self._sources, strict=False):
            if new is not old:
                break
            same += 1
        self._sources = messages
        self._made = {form: made[:same] for form, made in self._made.items()}
        made = self._made.setdefault(text_arguments, [])
        made += template_messages(messages[len(made) :], text_arguments=text_arguments)
        return list(made)
