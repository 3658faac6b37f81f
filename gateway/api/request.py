"""The request boundary: the raw body read and checked once.

Only the fields the gateway acts on are validated; the raw JSON object is
what goes upstream, so unknown fields pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.api.tool_schema import CHAT_TOOLS, ToolPlaces, check_tools
from gateway.ops.errors import ApiError
from gateway.ops.validation_errors import describe_errors, key_path

_TOOL_CHOICE_MODES = ("none", "auto", "required")
MAX_NESTING = 100  # levels of arrays and objects in a request; JSON encoders stop near 255


class _Checked(BaseModel):
    """Strict types; fields not declared are ignored here (and forwarded as sent)."""

    model_config = ConfigDict(strict=True)


_Request = TypeVar("_Request", bound=BaseModel)


class FunctionName(_Checked):
    name: str


class Tool(_Checked):
    type: Literal["function"]
    function: FunctionName


class Message(_Checked):
    """The fields of a message the gateway reads; the rest goes up as sent."""

    role: str  # required, as OpenAI has it; any name a template knows (`ipython`…) passes
    tool_calls: list[dict[str, Any]] | None = None


class ChatRequest(_Checked):
    """The fields of a chat completion request the gateway relies on."""

    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool | None = None
    n: int | None = Field(default=None, ge=1)
    tools: list[Tool] | None = None
    parallel_tool_calls: bool | None = None
    tool_choice: Any = None  # "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}
    separate_reasoning: bool | None = None
    stream_reasoning: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    reasoning: dict[str, Any] | None = None

    @field_validator("tool_choice")
    @classmethod
    def _tool_choice_shape(cls, choice: Any) -> Any:
        if choice is None or choice in _TOOL_CHOICE_MODES:
            return choice
        if isinstance(choice, dict) and choice.get("type") == "function":
            function = choice.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                return choice
        raise ValueError('must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}')

    def tools_active(self) -> bool:
        """Tool calls are parsed only when tools are offered and not turned off."""
        return bool(self.tools) and self.tool_choice != "none"

    def check_tool_choice(self) -> None:
        """A required or named tool choice needs matching tools (as SGLang)."""
        if self.tool_choice == "required" and not self.tools:
            raise ApiError(400, 'tool_choice is "required" but the request has no tools', param="tool_choice")
        if isinstance(self.tool_choice, dict):
            name = self.tool_choice["function"]["name"]
            if name not in {tool.function.name for tool in self.tools or ()}:
                raise ApiError(400, f"tool_choice names function {name!r}, which is not in tools", param="tool_choice")


def _too_deep(payload: dict) -> str | None:
    """The top-level field in which arrays and objects nest deeper than
    `MAX_NESTING`, if one does."""
    for key, value in payload.items():
        if (type(value) is dict or type(value) is list) and _nests_past(value, 2):
            return key
    return None


def _nests_past(node: dict | list, depth: int) -> bool:
    """Whether `node`, at `depth`, holds arrays or objects deeper than
    `MAX_NESTING`. It recurses at most `MAX_NESTING` calls deep, one per
    level, and looks at each value once: a quarter of the CPU of walking
    an explicit stack of (value, depth) pairs, on a coding agent's 300 KB
    request (bench/README.md, "A coding agent's long request")."""
    if depth > MAX_NESTING:
        return True
    for child in node.values() if type(node) is dict else node:
        if (type(child) is dict or type(child) is list) and _nests_past(child, depth + 1):
            return True
    return False


@dataclass(frozen=True)
class ItemBound:
    """The most items (`messages`, `input`) a request may hold: `limit`
    gives it for the request's `model` value."""

    field: str
    limit: Callable[[object], int]

    def check(self, payload: dict) -> None:
        """400 when the payload's list holds more (OpenAI's answer to an
        array over its maximum length, and Anthropic's to a request past its
        100,000 messages)."""
        items = payload.get(self.field)
        if not isinstance(items, list):
            return
        limit = self.limit(payload.get("model"))
        if len(items) > limit:
            message = f"{self.field} holds {len(items)} items; this gateway takes at most {limit} (max_input_items)"
            raise ApiError(400, message, param=self.field, code="array_above_max_length")


def read_object(raw: bytes, items: ItemBound | None = None) -> dict:
    """The request body's JSON object; 400 when it is not one, or when it
    holds more `items` than their bound (checked before anything else
    walks them)."""
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ApiError(400, f"request body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise ApiError(400, "request body must be a JSON object")
    if items is not None:
        items.check(payload)
    deep = _too_deep(payload)
    if deep is not None:
        raise ApiError(400, f"{deep} nests arrays and objects more than {MAX_NESTING} levels deep", param=deep)
    return payload


def read_checked(raw: bytes, checked: type[_Request], items: ItemBound | None = None) -> tuple[dict, _Request]:
    """The request's JSON object and its `checked` fields; 400 when malformed."""
    payload = read_object(raw, items)
    try:
        return payload, checked.model_validate(payload)
    except ValidationError as error:
        raise invalid_request(error) from None


def checked_payload(payload: dict, places: ToolPlaces = CHAT_TOOLS) -> ChatRequest:
    """The checked fields of a chat payload, the one check every surface's
    request goes through (chat's as sent, the others' as converted): its
    fields' types, its tools (named by `places`, where the client's request
    holds them), and its tool choice."""
    try:
        request = ChatRequest.model_validate(payload)
    except ValidationError as error:
        raise invalid_request(error) from None
    check_tools(payload.get("tools"), places)
    request.check_tool_choice()
    return request


def read_request(raw: bytes, items: ItemBound | None = None) -> tuple[dict, ChatRequest]:
    """A chat completion request's JSON object and its checked fields."""
    payload = read_object(raw, items)
    return payload, checked_payload(payload)


def invalid_request(error: ValidationError) -> ApiError:
    """A body's validation errors as the 400 every surface answers, naming
    the first error's field."""
    param = key_path(error.errors(include_url=False)[0]["loc"]) or None
    return ApiError(400, describe_errors(error), param=param)
