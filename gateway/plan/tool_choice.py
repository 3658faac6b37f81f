"""What `tool_choice` and `parallel_tool_calls` mean for one request.

- `none` (or no tools): no tool parsing, except that a request without
  tools is still read by a parser whose models call tools anyway
  (`parses_without_tools`, MiniMax M3) unless `tool_choice` is `none`.
- `auto`: the model's own parser. With a `strict` tool and a backend
  dialect that takes structural tags, the format's structural tag is sent.
  The backend server may need another `tool_choice` so that it neither
  refuses the request nor parses the calls itself (servers.py).
- `required` / named: with a `guided_decoding` dialect, the backend is sent
  the JSON-schema constraint for an array of calls and the reply is read as
  that array; without one, the model's own parser reads it. When the reply
  may open with reasoning (`ReasoningBlock`, reasoning_first.py), the
  constraint lets that block come first and the reply is read from it. A named choice
  keeps only calls to that function. Either way a reply without a call is
  flagged (`parsegate_warning`), never a silent success.
- `parallel_tool_calls: false`: at most one call (`maxItems: 1` in the
  constraint, and only the first call is returned).

A model whose format comes from a `response_template` has no grammar that
could hold the model to a guarantee, so, as vLLM answers for a parser that
cannot, a request that asks for one is refused with a 400 saying why:
`required` or a named function, and `parallel_tool_calls: false`, unless
the backend takes the JSON-schema constraint (`guided_decoding`); `strict`
tools unless that constraint carries them (required / named).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.ops.config import ModelConfig
from gateway.ops.errors import ApiError
from gateway.ops.servers import SERVERS
from gateway.plan.constraints import DIALECTS, call_array_schema, has_strict_tool, structural_tag
from gateway.plan.reasoning_first import ReasoningBlock
from parsers import tool_format
from parsers.stages.tool_calls import ToolFormat

NO_CALL = {
    "parsegate_warning": {
        "code": "no_tool_call",
        "message": "tool_choice required a tool call, and the model made none",
    }
}


@dataclass(frozen=True, slots=True)
class ToolChoicePlan:
    """`tool_call_parser`: the model's parser, when it reads the reply;
    `call_array`: the reply is a constrained JSON array of calls instead.
    `names`/`max_calls` limit the calls returned; `require_call` flags a
    reply without one; `upstream` are request fields set for the backend.
    `reasoning_first`: the call array's constraint lets the reply's
    reasoning come first, so the reply is read from its reasoning; without
    it a call array is read from outside reasoning."""

    tool_call_parser: str | ToolFormat | None = None
    call_array: bool = False
    reasoning_first: bool = False
    names: frozenset[str] | None = None
    max_calls: int | None = None
    require_call: bool = False
    upstream: dict = field(default_factory=dict)

    def unmet(self, made_call: bool) -> dict | None:
        """The choice's extra fields when a call was required and none came."""
        return NO_CALL if self.require_call and not made_call else None


def plan_tool_choice(
    payload: dict, tools_active: bool, model: ModelConfig, reasoning: ReasoningBlock | None = None
) -> ToolChoicePlan:
    """The tool-call handling of one request to `model` whose reply may open
    with the `reasoning` block (module docstring)."""
    if not tools_active:
        return ToolChoicePlan(_parser_without_tools(payload, model))
    tools = payload["tools"]
    choice = payload.get("tool_choice") or "auto"
    named = choice["function"]["name"] if isinstance(choice, dict) else None
    parallel = payload.get("parallel_tool_calls") is not False
    names = frozenset((named,)) if named else None
    max_calls = None if parallel else 1
    dialect = DIALECTS.get(model.guided_decoding or "none")
    client_constraint = next((key for key in dialect.constraint_fields if key in payload), None) if dialect else None
    if model.response_formats is not None:
        _refuse_unenforceable(choice, named, parallel, tools, constrained=dialect is not None)
    if choice == "required" or named:
        if dialect is None:
            return ToolChoicePlan(model.tool_stage, require_call=True, names=names, max_calls=max_calls)
        if client_constraint:
            what = "required" if named is None else "naming a function"
            raise ApiError(
                400, f"tool_choice {what} cannot be combined with {client_constraint}", param=client_constraint
            )
        schema = call_array_schema(tools, named, parallel)
        constraint = dialect.json_schema(schema) if reasoning is None else dialect.after_reasoning(schema, reasoning)
        return ToolChoicePlan(
            None,
            call_array=True,
            reasoning_first=reasoning is not None,
            require_call=True,
            upstream={**constraint, "tool_choice": dialect.tool_choice},
            names=names,
            max_calls=max_calls,
        )
    upstream = {}
    parser = model.tool_stage
    if parser and dialect and dialect.structural_tag and not client_constraint and has_strict_tool(tools):
        tag = structural_tag(tool_format(parser).name, tools)
        if tag is not None:
            upstream = {**dialect.structural_tag(tag), "tool_choice": dialect.tool_choice}
    server_choice = SERVERS[model.backend.server_kind].tool_choice_when_parsing
    if parser and server_choice:
        upstream = {**upstream, "tool_choice": server_choice}
    return ToolChoicePlan(parser, upstream=upstream, names=names, max_calls=max_calls)


def _refuse_unenforceable(choice: object, named: str | None, parallel: bool, tools: list[dict], *, constrained: bool):
    """A 400 for a guarantee a response template cannot give (module docstring)."""
    forced = choice == "required" or named is not None
    why = "this model's response_template has no grammar to enforce it"
    if forced and not constrained:
        what = "'required'" if named is None else "naming a function"
        raise ApiError(400, f"tool_choice {what} is not supported: {why}", param="tool_choice")
    if not parallel and not (forced and constrained):
        raise ApiError(400, f"parallel_tool_calls false is not supported: {why}", param="parallel_tool_calls")
    if has_strict_tool(tools) and not (forced and constrained):
        raise ApiError(400, f"strict tools are not supported: {why}", param="tools")


def _parser_without_tools(payload: dict, model: ModelConfig) -> str | ToolFormat | None:
    """The parser that reads a request with no tools, if the model's does."""
    parser = model.tool_stage
    if parser and not payload.get("tools") and payload.get("tool_choice") != "none":
        return parser if tool_format(parser).parses_without_tools else None
    return None
