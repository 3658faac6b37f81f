"""Cast a string argument to its declared type, as transformers'
`parse_response(tools=…)` does for a declarative response template.

The rule differs from `parsers.core.coerce` (which types the raw text of
key/value formats) because it must agree with transformers exactly:

- the types are the property's own `type` (a name or a list of names),
  then those of its `anyOf` / `oneOf` branches, in that order, then
  `null` if it says `nullable`; no `$ref`, enum or loose type names;
- only a string value is cast (or the string items of a list, where the
  types do not allow an array); the first type the string casts to wins,
  tried in the declared order, `string` included (it casts nothing, so
  `["string", "integer"]` still makes `"7"` the number 7);
- `integer`: Python's `int()` of the string, else its `float()` when that
  is a whole number (`"3.0"` → 3, `"1e3"` → 1000);
- `number`: its `float()` unless NaN or infinite, kept an integer when
  whole and written without a `.` (`"1e3"` → 1000, `"2.0"` → 2.0);
- `boolean`: `true`/`1`/`false`/`0`, any case, blanks around;
- `null`: `null` or `None`, blanks around;
- `object` / `array`: the string as JSON, when it is that kind of value;
- otherwise the string stays a string.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

Types = tuple[str, ...]

# The types that can turn a string into something else; `string` and
# unknown names cast nothing.
CASTING_TYPES = frozenset(("integer", "number", "boolean", "null", "object", "array"))


def declared_types(schema: Any) -> Types:
    """The property's types in the order they are tried."""
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(name for name in declared if isinstance(name, str))
    for union in ("anyOf", "oneOf"):
        for branch in schema.get(union) or ():
            types.extend(declared_types(branch))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def declared_properties(tools: list[dict] | None) -> dict[str, dict[str, Types]]:
    """Function name -> parameter name -> its declared types, for the
    functions whose parameters have properties (later tools win)."""
    out = {
        name: {key: declared_types(schema) for key, schema in properties.items()}
        for name, properties in offered_functions(tools)
    }
    return {name: types for name, types in out.items() if types}


def offered_functions(tools: list | None) -> Iterator[tuple[str, dict]]:
    """Each offered function's name and its parameters' `properties` (empty
    where it declares none), in the order offered; a tool with no name is skipped."""
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        yield function["name"], properties if isinstance(properties, dict) else {}


def cast_string(text: str, types: Types) -> Any:
    """`text` cast to the first declared type it is; `text` itself when none."""
    for name in types:
        cast = _CASTS.get(name)
        if cast is None:
            continue
        try:
            value = cast(text)
        except (ValueError, RecursionError):
            continue
        if value is not _NOT:
            return value
    return text


_NOT = object()


def _integer(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        number = float(text)
        return int(number) if number.is_integer() else _NOT


def _number(text: str) -> Any:
    number = float(text)
    if math.isnan(number) or math.isinf(number):
        return _NOT
    return int(number) if number.is_integer() and "." not in text else number


def _boolean(text: str) -> Any:
    word = text.strip().lower()
    return word in ("true", "1") if word in ("true", "1", "false", "0") else _NOT


def _null(text: str) -> Any:
    return None if text.strip() in ("null", "None") else _NOT


def _container(kind: type) -> Any:
    def cast(text: str) -> Any:
        value = json.loads(text)
        return value if isinstance(value, kind) else _NOT

    return cast


_CASTS = {
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "null": _null,
    "object": _container(dict),
    "array": _container(list),
}
