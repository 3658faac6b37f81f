"""The tools of the internal chat request, checked at the request
boundary for every surface: each tool's name is offered once (a call names
the tool it calls), and each `parameters` schema has the shape JSON Schema
gives its keywords, since the parsers and the decoding constraints read
them. A tool that breaks either is a 400 naming the field as the client
sent it (`tools[0].function.parameters.properties` on chat,
`tools[0].parameters...` on Responses, `tools[0].input_schema...` on
Messages), never a failure deep inside a parser.

Only the shape is checked, not the meaning: unknown keywords and loose
type names (`"int"`, `"str"`) pass, as the parsers read them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gateway.ops.errors import ApiError

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMAS = ("additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties")


def _is_schema(value: object) -> bool:
    return isinstance(value, (dict, bool))


def _problems(schema: dict, where: str) -> Iterator[tuple[str, str, object]]:
    """(path, what it must be, the sub-schema to check next or None) for
    each keyword of `schema`."""
    kind = schema.get("type")
    if "type" in schema and not (
        isinstance(kind, str) or (isinstance(kind, list) and all(isinstance(name, str) for name in kind))
    ):
        yield f"{where}.type", "a type name or an array of type names", None
    required = schema.get("required")
    if "required" in schema and not (isinstance(required, list) and all(isinstance(key, str) for key in required)):
        yield f"{where}.required", "an array of property names", None
    if "enum" in schema and not isinstance(schema["enum"], list):
        yield f"{where}.enum", "an array", None
    if "$ref" in schema and not isinstance(schema["$ref"], str):
        yield f"{where}.$ref", "a string", None
    for key in _SCHEMA_MAPS:
        if key in schema:
            value = schema[key]
            if not isinstance(value, dict) or not all(_is_schema(item) for item in value.values()):
                yield f"{where}.{key}", "an object whose values are schemas", None
            else:
                yield from ((f"{where}.{key}.{name}", "", item) for name, item in value.items())
    for key in _SCHEMA_LISTS:
        if key in schema:
            value = schema[key]
            if not isinstance(value, list) or not all(_is_schema(item) for item in value):
                yield f"{where}.{key}", "an array of schemas", None
            else:
                yield from ((f"{where}.{key}[{index}]", "", item) for index, item in enumerate(value))
    for key in (*_SCHEMAS, "items"):
        if key in schema:
            value = schema[key]
            if key == "items" and isinstance(value, list) and all(_is_schema(item) for item in value):
                yield from ((f"{where}.items[{index}]", "", item) for index, item in enumerate(value))
            elif not _is_schema(value):
                yield f"{where}.{key}", "a schema (an object or a boolean)", None
            else:
                yield f"{where}.{key}", "", value


def check_parameters(parameters: object, where: str) -> None:
    """400 naming the first keyword of `parameters` (at `where`) whose value
    has the wrong shape. Iterative: the request's nesting is bounded already."""
    if parameters is None:
        return
    if not isinstance(parameters, dict):
        raise ApiError(400, f"{where} must be a JSON schema object", param=where)
    pending = [(where, parameters)]
    while pending:
        path, schema = pending.pop()
        for field, expected, child in _problems(schema, path):
            if expected:
                raise ApiError(400, f"{field} must be {expected}", param=field)
            if isinstance(child, dict):
                pending.append((field, child))


@dataclass(frozen=True)
class ToolPlaces:
    """Where the client's request holds each tool of the chat payload: the
    path of each (`tools[{index}]` unless given), and the keys of its
    schema and its name inside it (chat's by default)."""

    paths: Sequence[str] | None = None
    schema: str = "function.parameters"
    name: str = "function.name"

    def of(self, index: int, key: str) -> str:
        path = self.paths[index] if self.paths is not None else f"tools[{index}]"
        return f"{path}.{key}"


CHAT_TOOLS = ToolPlaces()


def check_tools(tools: list[dict] | None, places: ToolPlaces = CHAT_TOOLS) -> None:
    """Every tool (each `{"type": "function", "function": {"name": str, …}}`,
    as the chat request's fields are checked first) has a name no other
    tool has, and a well-formed schema."""
    names: set[str] = set()
    for index, tool in enumerate(tools or ()):
        function = tool["function"]
        if "parameters" in function:
            check_parameters(function["parameters"], places.of(index, places.schema))
        if function["name"] in names:
            where = places.of(index, places.name)
            raise ApiError(400, f"{where}: two tools are named {function['name']!r}", param=where)
        names.add(function["name"])
