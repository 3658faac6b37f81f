"""The parse plan a chat request implies: which parser stages run, with
which options, and the fields it sets for the backend. Every surface's
request becomes one chat request and so one plan."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field, replace

from gateway.ops.config import ModelConfig
from gateway.ops.ids import new_id
from gateway.plan.reasoning_first import reasoning_block
from gateway.plan.request_fields import history_fields
from gateway.plan.response_format import response_format_upstream
from gateway.plan.tool_choice import ToolChoicePlan, plan_tool_choice
from parsers import OutputFormat, Pipeline, make_pipeline, output_format, reasoning_format, tool_format
from parsers.stages.call_filter import CallFilter
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat


@dataclass(frozen=True, slots=True)
class ParsePlan:
    """Which parser stages run for one request, and with which options.
    A stage is a parser name, or a format given as data (a model's
    `response_template`)."""

    reasoning_parser: str | ReasoningFormat | None
    tool_call_parser: str | ToolFormat | None
    tools: list[dict] | None
    chat_template_kwargs: dict | None
    stream_reasoning: bool
    call_id_template: str | None = None
    earlier_calls: int = 0
    tool_choice: ToolChoicePlan = ToolChoicePlan()
    upstream: dict = field(default_factory=dict)  # request fields set for the backend
    reasoning_keys: tuple[str, ...] = ("reasoning_content",)
    max_buffered_chars: int | None = None
    starts_in_reasoning: bool | None = None  # True: the rendered prompt left a reasoning block open
    output: OutputFormat = OutputFormat()  # the model's: end-of-turn tokens, framing, trimmed ends, cast arguments

    @classmethod
    def for_request(
        cls, payload: dict, model: ModelConfig, *, tools_active: bool, max_buffered_chars: int | None = None
    ) -> ParsePlan:
        """The plan for a checked chat request's JSON object `payload`."""
        separate = payload.get("separate_reasoning") is not False
        # The model's stages, read once each (a read costs microseconds: ModelConfig.tool_stage).
        reasoning_stage, tool_stage = model.reasoning_stage, model.tool_stage
        # The reasoning block matters only to a constraint (reasoning_first.py): worked out for those alone.
        response_format = payload.get("response_format")
        choice = payload.get("tool_choice")
        constrained = response_format is not None or choice == "required" or isinstance(choice, dict)
        reasoning = (
            reasoning_block(reasoning_stage, payload.get("chat_template_kwargs")) if separate and constrained else None
        )
        tool_choice = plan_tool_choice(payload, tools_active, model, reasoning)
        tool_call_parser = tool_choice.tool_call_parser
        upstream = {
            **(response_format_upstream(payload, model, reasoning) if response_format is not None else {}),
            **tool_choice.upstream,
            **history_fields(payload["messages"]),
        }
        call_id_template = tool_format(tool_stage).call_id_template if tool_stage else None
        return cls(
            reasoning_parser=reasoning_stage if separate else None,
            tool_call_parser=tool_call_parser,
            tool_choice=tool_choice,
            upstream=upstream,
            reasoning_keys=model.reasoning_keys,
            tools=payload.get("tools"),
            chat_template_kwargs=payload.get("chat_template_kwargs"),
            stream_reasoning=payload.get("stream_reasoning") is not False,
            call_id_template=call_id_template,
            output=output_format(reasoning_stage, tool_stage, model.response_formats),
            max_buffered_chars=max_buffered_chars,
            earlier_calls=sum(
                len(message.get("tool_calls") or ())
                for message in payload["messages"]
                if message.get("role") == "assistant"
            ),
        )

    @property
    def tool_stage_name(self) -> str | None:
        """What reads the tool calls, for metrics: the parser's name, or
        `call_array` for a reply constrained to an array of calls."""
        if self.tool_choice.call_array:
            return "call_array"
        parser = self.tool_call_parser
        return parser.name if isinstance(parser, ToolFormat) else parser

    def call_id(self, name: str, index: int, prefix: str = "call_") -> str:
        """The id of this turn's call number `index` on every surface: the
        model family's own when its template reads ids back (Kimi K2:
        `functions.NAME:N`, N counting the conversation's earlier calls;
        Mistral: 9 letters and digits), else `prefix` and 24 hex digits
        (OpenAI's `call_…`, Anthropic's `toolu_…`)."""
        if self.call_id_template:
            return self.call_id_template.format(name=name, n=self.earlier_calls + index, random=_RANDOM)
        return new_id(prefix)

    def pipeline(self) -> Pipeline | CallFilter:
        """A fresh pipeline for one choice. Whether the reply starts inside
        reasoning follows the request's thinking switch (absent = the
        format's default), as SGLang serves it; a reply constrained to a
        JSON array of calls starts outside it, unless its constraint let
        the reasoning come first (reasoning_first.py)."""
        choice = self.tool_choice
        reasoning = self.reasoning_parser
        if choice.reasoning_first and reasoning is not None:
            # Its constraint ends the reasoning at the end marker alone, not at a tool-call marker written in it.
            reasoning = replace(reasoning_format(reasoning), tool_start=None)
        pipeline = make_pipeline(
            reasoning,
            self.tool_call_parser,
            output=self.output,
            tools=self.tools,
            chat_template_kwargs=self.chat_template_kwargs or {},
            stream_reasoning=self.stream_reasoning,
            force_reasoning=False if choice.call_array and not choice.reasoning_first else self.starts_in_reasoning,
            force_nonempty_content=bool((self.chat_template_kwargs or {}).get("force_nonempty_content")),
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
        framing = self.output.framing and reasoning_format(self.output.framing).needs_special_tokens
        return bool(reasoning or tools or framing)


class _RandomAlphanumeric:
    """`{random:N}` in a call-id template: N random ASCII letters and digits,
    as vLLM's `MistralToolCall.generate_random_id` makes Mistral's ids
    (`vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py`)."""

    def __format__(self, length: str) -> str:
        return "".join(random.choices(string.ascii_letters + string.digits, k=int(length)))


_RANDOM = _RandomAlphanumeric()
