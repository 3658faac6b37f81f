"""The tools of a Responses request (`POST /v1/responses`) as chat
functions: `function` as it is; `custom` as a function with one string
parameter `input`; `namespace` flattened (a name another tool already has
gets its namespace as prefix); hosted tools dropped with a log line; the
tools that input items add (`additional_tools`, a client tool search's
output) after the request's own.
`Tools` remembers what each offered name was, so the reply's calls go back
out in their own kind, and where the request held it, so that chat's
check (request.py) names the field as sent. `tool_choice` follows,
`allowed_tools` narrowing the offer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson

from gateway.api.tool_schema import ToolPlaces
from gateway.ops.errors import ApiError

log = logging.getLogger("parsegate.responses")


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


def offered_tools(tools: list[dict], added: Sequence[tuple[dict, str]] = ()) -> Tools:
    """The request's `tools`, then the tools its input's `additional_tools`
    items add (each with its place), as chat functions, remembered by kind
    and place."""
    offered = Tools()
    for tool, path in [*((tool, f"tools[{index}]") for index, tool in enumerate(tools)), *added]:
        kind = tool.get("type")
        if kind == "function":
            offered.add_function(tool, path)
        elif kind == "custom":
            offered.add_custom(tool, path)
        elif kind == "namespace":
            inner_tools = tool.get("tools")
            for place, inner in enumerate(inner_tools if isinstance(inner_tools, list) else []):
                if isinstance(inner, dict) and inner.get("type", "function") == "function":
                    offered.add_function(inner, f"{path}.tools[{place}]", namespace=str(tool.get("name") or ""))
        else:
            log.info("responses: dropped the hosted tool %r, which this gateway cannot run", kind)
    return offered


def chat_tool_choice(choice: object, tools: Tools) -> object:
    """The request's `tool_choice` as chat's (an `allowed_tools` choice narrows `tools`)."""
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
