"""Which of the request's functions a call that names none is for, from its
arguments: Kimi K2 may write a bare counter for a call's id
(`<|tool_call_begin|>0 <|tool_call_argument_begin|>{"city": "Tokyo"}`), and
vLLM's Kimi K2 parser then takes the only function offered, or the one
function whose parameters hold every argument written
(vllm/tool_parsers/kimi_k2_tool_parser.py; its tests
tests/tool_parsers/test_kimi_k2_tool_parser.py, `test_bare_counter*`,
https://github.com/vllm-project/vllm).
"""

from __future__ import annotations

import orjson

from parsers.core.declared_cast import offered_functions


def function_names(tools: list | None) -> list[str]:
    """The names of the request's functions, in order."""
    names = []
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def only_function(tools: list | None) -> str | None:
    """The function's name when the request offers exactly one."""
    names = function_names(tools)
    return names[0] if len(names) == 1 else None


def function_for(tools: list | None, arguments: str) -> str | None:
    """The one function whose parameters hold every key of `arguments` (a
    JSON object); None when the arguments are no object or more or fewer
    than one function fits."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    fitting = [name for name, properties in _properties(tools) if set(value) <= properties]
    return fitting[0] if len(fitting) == 1 else None


def _properties(tools: list | None) -> list[tuple[str, set[str]]]:
    return [(name, set(properties)) for name, properties in offered_functions(tools)]
