"""Decoding constraints for tool calls, as SGLang builds them (its
`structural_tag` and `json_schema` constraints; docs/api.md, "tool_choice"),
and where each backend dialect (`guided_decoding`) takes them.

- `call_array_schema`: for `tool_choice: "required"` or a named tool, the
  JSON schema of an array of `{"name", "parameters"}` call objects.
- `structural_tag`: for `auto` with a `strict` tool, SGLang's legacy
  structural tag: one structure per tool (the format's begin text, the
  tool's parameters schema if strict else any JSON, its end text),
  triggered by the format's call-start marker.
- `Dialect.after_reasoning`: a JSON schema behind the reasoning block a
  thinking model's reply opens with (reasoning_first.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

from gateway.ops.errors import ApiError
from gateway.plan import reasoning_first
from gateway.plan.gbnf import schema_grammar
from gateway.plan.reasoning_first import ReasoningBlock

# Per tool-call format: (begin with NAME, end, trigger) of SGLang's structural tags (docs/api.md, "tool_choice").
_STRUCTURES: dict[str, tuple[str, str, str]] = {
    "qwen25": ('<tool_call>\n{"name":"NAME", "arguments":', "}\n</tool_call>", "<tool_call>"),
    "trinity": ('<tool_call>\n{"name":"NAME", "arguments":', "}\n</tool_call>", "<tool_call>"),
    "hermes": ('<tool_call>{"name":"NAME", "arguments":', "}</tool_call>", "<tool_call>"),
    "mistral": ('[TOOL_CALLS] [{"name":"NAME", "arguments":', "}]", "[TOOL_CALLS]"),
    "llama3": ('<|python_tag|>{"name":"NAME", "arguments":', "}", "<|python_tag|>"),
    "deepseekv3": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n",
        "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "<｜tool▁calls▁begin｜>",
    ),
    "deepseekv31": ("<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁call▁begin｜>"),
    "deepseekv32": ('<｜DSML｜invoke name="NAME">', "</｜DSML｜invoke>", "<｜DSML｜invoke"),
    "deepseekv4": ('<｜DSML｜invoke name="NAME">', "</｜DSML｜invoke>", "<｜DSML｜invoke"),
    "deepseekv41": ('<｜DSML｜ invoke name="NAME">', "</｜DSML｜ invoke>", "<｜DSML｜ invoke"),
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>",
        "<|tool_call_end|><|tool_calls_section_end|>",
        "<|tool_calls_section_begin|>",
    ),
    "interns1": (
        '<|action_start|> <|plugin|>\n{"name": "NAME", "parameters": ',
        "}<|action_end|>",
        "<|action_start|> <|plugin|>",
    ),
    "apertus2509": ('<|tools_prefix|>[{"NAME": ', "}]<|tools_suffix|>", "<|tools_prefix|>"),
}
_EMPTY_PARAMETERS = {"type": "object", "properties": {}}


def _function(tool: dict) -> dict:
    return tool.get("function") or {}


def _call_schema(tool: dict) -> dict:
    function = _function(tool)
    return {
        "properties": {
            "name": {"type": "string", "enum": [function["name"]]},
            "parameters": function.get("parameters") or _EMPTY_PARAMETERS,
        },
        "required": ["name", "parameters"],
    }


def _merged_defs(tools: list[dict]) -> dict:
    defs: dict = {}
    for tool in tools:
        for name, schema in ((_function(tool).get("parameters") or {}).get("$defs") or {}).items():
            if defs.setdefault(name, schema) != schema:
                raise ApiError(400, f"tools define $defs {name!r} differently; it cannot be constrained", param="tools")
    return defs


def call_array_schema(tools: list[dict], named: str | None, parallel: bool) -> dict:
    """The JSON schema of the calls array for `required` (any tool) or a
    named tool (`named`); `maxItems: 1` without parallel calls."""
    if named is not None:
        tool = next(tool for tool in tools if _function(tool).get("name") == named)
        schema = {"type": "array", "minItems": 1, "items": _call_schema(tool)}
    else:
        items = {"type": "object", "anyOf": [_call_schema(tool) for tool in tools]}
        schema = {"type": "array", "minItems": 1, "items": items}
    if not parallel:
        schema["maxItems"] = 1
    defs = _merged_defs(tools)
    if defs:
        schema["$defs"] = defs
    return schema


def has_strict_tool(tools: list[dict]) -> bool:
    return any(_function(tool).get("strict") is True for tool in tools)


def structural_tag(format_name: str, tools: list[dict]) -> dict | None:
    """SGLang's structural tag for these tools in this format, or None when
    the format has none."""
    structure = _STRUCTURES.get(format_name)
    if structure is None:
        return None
    begin, end, trigger = structure
    structures = [
        {
            "begin": begin.replace("NAME", _function(tool)["name"]),
            "schema": (_function(tool).get("parameters") or _EMPTY_PARAMETERS) if _function(tool).get("strict") else {},
            "end": end,
        }
        for tool in tools
    ]
    return {"type": "structural_tag", "structures": structures, "triggers": [trigger]}


@dataclass(frozen=True)
class Dialect:
    """How one kind of backend server takes constraints.

    `json_schema(schema)` and `structural_tag(tag)` give the request fields
    that carry them (`structural_tag` None: not supported), and
    `after_reasoning(schema, block)` those of `schema` behind a reasoning
    block. `constraint_fields` are the client fields that already constrain
    decoding. `tool_choice` is sent upstream whenever the gateway sends a
    constraint, so the server neither builds its own constraint nor parses
    the calls. `rewrites_response_format`: a client's JSON `response_format`
    is sent as `after_reasoning` when the reply may open with reasoning
    (llama-server ignores `response_format` on a raw-text chat path, so
    that dialect leaves it alone: docs/api.md).
    """

    json_schema: Callable[[dict], dict]
    structural_tag: Callable[[dict], dict] | None
    after_reasoning: Callable[[dict, ReasoningBlock], dict]
    constraint_fields: tuple[str, ...]
    tool_choice: str
    rewrites_response_format: bool


DIALECTS: dict[str, Dialect] = {
    "vllm": Dialect(
        json_schema=lambda schema: {"structured_outputs": {"json": schema}},
        structural_tag=lambda tag: {"structured_outputs": {"structural_tag": orjson.dumps(tag).decode()}},
        after_reasoning=lambda schema, block: {
            "structured_outputs": {
                "structural_tag": orjson.dumps(reasoning_first.structural_tag(schema, block)).decode()
            }
        },
        constraint_fields=("structured_outputs", "response_format", "guided_json", "guided_regex", "guided_grammar"),
        tool_choice="none",
        rewrites_response_format=True,
    ),
    "sglang": Dialect(
        json_schema=lambda schema: {
            "response_format": {"type": "json_schema", "json_schema": {"name": "tool_calls", "schema": schema}}
        },
        structural_tag=lambda tag: {"response_format": tag},
        after_reasoning=lambda schema, block: {"response_format": reasoning_first.structural_tag(schema, block)},
        constraint_fields=("response_format", "regex", "ebnf", "json_schema"),
        tool_choice="auto",
        rewrites_response_format=True,
    ),
    "llamacpp": Dialect(
        json_schema=lambda schema: {"grammar": schema_grammar(schema)},
        structural_tag=None,
        after_reasoning=lambda schema, block: {"grammar": reasoning_first.grammar(schema, block)},
        constraint_fields=("response_format", "json_schema", "grammar"),
        tool_choice="none",
        rewrites_response_format=False,
    ),
}
