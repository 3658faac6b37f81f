"""The request boundary: the raw body read and checked once, and the parse
plan it implies (which parser stages run, with which options).

Only the fields the gateway acts on are validated; the raw JSON object is
what goes upstream, so unknown fields pass through untouched.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.config import ModelConfig, describe_errors, key_path
from gateway.errors import ApiError
from gateway.history import history_fields
from gateway.tool_choice import ToolChoicePlan, plan_tool_choice
from parsers import Pipeline, make_pipeline, reasoning_format, tool_format
from parsers.call_filter import CallFilter
from parsers.pipeline import end_of_turn_tokens

_TOOL_CHOICE_MODES = ("none", "auto", "required")


class _Checked(BaseModel):
    """Strict types; fields not declared are ignored here (and forwarded as sent)."""

    model_config = ConfigDict(strict=True)


_Request = TypeVar("_Request", bound=BaseModel)


class FunctionName(_Checked):
    name: str


class Tool(_Checked):
    type: Literal["function"]
    function: FunctionName


class ChatRequest(_Checked):
    """The fields of a chat completion request the gateway relies on."""

    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
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


def read_checked(raw: bytes, checked: type[_Request]) -> tuple[dict, _Request]:
    """The request's JSON object and its `checked` fields; 400 when malformed."""
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ApiError(400, f"request body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise ApiError(400, "request body must be a JSON object")
    try:
        return payload, checked.model_validate(payload)
    except ValidationError as error:
        param = key_path(error.errors(include_url=False)[0]["loc"]) or None
        raise ApiError(400, describe_errors(error), param=param) from None


def read_request(raw: bytes) -> tuple[dict, ChatRequest]:
    """A chat completion request's JSON object and its checked fields."""
    payload, request = read_checked(raw, ChatRequest)
    request.check_tool_choice()
    return payload, request


@dataclass(frozen=True, slots=True)
class ParsePlan:
    """Which parser stages run for one request, and with which options."""

    reasoning_parser: str | None
    tool_call_parser: str | None
    tools: list[dict] | None
    chat_template_kwargs: dict | None
    stream_reasoning: bool
    call_id_template: str | None = None
    earlier_calls: int = 0
    end_of_turn: tuple[str, ...] = ()
    tool_choice: ToolChoicePlan = ToolChoicePlan()
    upstream: dict = field(default_factory=dict)  # request fields set for the backend
    reasoning_keys: tuple[str, ...] = ("reasoning_content",)
    max_buffered_chars: int | None = None

    @classmethod
    def for_request(
        cls, payload: dict, request: ChatRequest, model: ModelConfig, *, max_buffered_chars: int | None = None
    ) -> ParsePlan:
        separate = request.separate_reasoning is not False
        tool_choice = plan_tool_choice(payload, request.tools_active(), model)
        tool_call_parser = tool_choice.tool_call_parser
        upstream = {**tool_choice.upstream, **history_fields(payload["messages"])}
        return cls(
            reasoning_parser=model.reasoning_parser if separate else None,
            tool_call_parser=tool_call_parser,
            tool_choice=tool_choice,
            upstream=upstream,
            reasoning_keys=model.reasoning_keys,
            tools=payload.get("tools"),
            chat_template_kwargs=payload.get("chat_template_kwargs"),
            stream_reasoning=request.stream_reasoning is not False,
            call_id_template=tool_format(tool_call_parser).call_id_template if tool_call_parser else None,
            end_of_turn=end_of_turn_tokens(model.reasoning_parser, model.tool_call_parser),
            max_buffered_chars=max_buffered_chars,
            earlier_calls=sum(
                len(message.get("tool_calls") or ())
                for message in request.messages
                if message.get("role") == "assistant"
            ),
        )

    @property
    def tool_stage_name(self) -> str | None:
        """What reads the tool calls, for metrics: the parser's name, or
        `call_array` for a reply constrained to an array of calls."""
        return "call_array" if self.tool_choice.call_array else self.tool_call_parser

    def call_id(self, name: str, index: int) -> str:
        """The id of this turn's call number `index`: OpenAI's `call_` and 24
        hex digits, or the model family's own numbering (Kimi K2:
        `functions.NAME:N`, N counting the conversation's earlier calls)."""
        if self.call_id_template:
            return self.call_id_template.format(name=name, n=self.earlier_calls + index)
        return f"call_{uuid.uuid4().hex[:24]}"

    def pipeline(self) -> Pipeline | CallFilter:
        """A fresh pipeline for one choice. Whether the reply starts inside
        reasoning follows the request's thinking switch (absent = the
        format's default), as SGLang serves it; a reply constrained to a
        JSON array of calls starts outside it."""
        choice = self.tool_choice
        pipeline = make_pipeline(
            self.reasoning_parser,
            self.tool_call_parser,
            tools=self.tools,
            chat_template_kwargs=self.chat_template_kwargs or {},
            stream_reasoning=self.stream_reasoning,
            force_reasoning=False if choice.call_array else None,
            force_nonempty_content=bool((self.chat_template_kwargs or {}).get("force_nonempty_content")),
            end_of_turn=self.end_of_turn,
            call_array=choice.call_array,
            max_buffered_chars=self.max_buffered_chars,
        )
        if choice.names is None and choice.max_calls is None:
            return pipeline
        return CallFilter(pipeline, names=choice.names, max_calls=choice.max_calls)

    def keeps_special_tokens(self) -> bool:
        """Whether an active stage's markers are special tokens the backend
        would otherwise strip."""
        reasoning = self.reasoning_parser and reasoning_format(self.reasoning_parser).needs_special_tokens
        tools = self.tool_call_parser and tool_format(self.tool_call_parser).needs_special_tokens
        return bool(reasoning or tools)
