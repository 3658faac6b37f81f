"""Type a parameter value written as text, by the tool's JSON schema.

Formats that do not write JSON (key/value tags) give every value as raw
text. This module, shared by all of them, turns that text into JSON text:

- a string parameter stays the text, verbatim (`"007"` stays `"007"`,
  `true` stays `"true"`);
- integer, number, boolean and null take the text when it really is one
  (`42`, `-1.5e3`, `True`, `null`); big integers keep every digit;
- object and array take JSON, or a Python literal (`{'a': 1}`, `(1, 2)`);
- `null` (or `None`) is null for a parameter that cannot be a string;
- where the schema allows several types (type lists, `anyOf`/`oneOf`,
  enums), the first type the text really is wins, in the order
  null, boolean, integer, number, object/array, string;
- loose type names are read as the JSON type they mean (`int`, `uint32`,
  `long` are integer; `float`, `double` number; `bool` boolean; `str`,
  `text` string; `dict` object; `list`, `tuple` array);
- a parameter schema that is a local `$ref` (`#/$defs/X`) is read as its
  target;
- a value that fits no allowed type, or a parameter the schema does not
  describe, keeps its raw text as a string. Arguments never go missing.
"""

from __future__ import annotations

import ast
import json
import re

import orjson

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_JSON_TYPES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
    list: "array",
    dict: "object",
}

Types = frozenset


def parameter_types(tools: list[dict] | None, function: str) -> dict[str, Types]:
    """Parameter name -> the JSON types its schema allows, for one function."""
    for tool in tools or ():
        spec = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(spec, dict) and spec.get("name") == function:
            root = spec.get("parameters")
            return {key: schema_types(_resolved(schema, root)) for key, schema in _properties(root).items()}
    return {}


def function_parameters(tools: list[dict] | None, function: str):
    """The parameters schema of one function, local `$ref`s resolved
    throughout (a `$ref` inside its own target is left as it is)."""
    for tool in tools or ():
        spec = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(spec, dict) and spec.get("name") == function:
            root = spec.get("parameters")
            return _inlined(root, root, frozenset())
    return None


def _inlined(schema, root, path: frozenset):
    if isinstance(schema, list):
        return [_inlined(item, root, path) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in path:
            return schema
        path = path | {ref}
        schema = _resolved(schema, root)
    return {key: _inlined(value, root, path) for key, value in schema.items() if key not in ("$defs", "definitions")}


def _resolved(schema, root):
    """`schema` with a local `$ref` (`#/$defs/X`, `#/definitions/X`) replaced
    by its target; keys beside the `$ref` win over the target's."""
    seen = set()
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        ref = schema["$ref"]
        seen.add(ref)
        section, _, name = ref.removeprefix("#/").partition("/")
        defs = root.get(section) if section in ("$defs", "definitions") and isinstance(root, dict) else None
        target = defs.get(name) if isinstance(defs, dict) else None
        if not isinstance(target, dict):
            break
        schema = {**target, **{key: value for key, value in schema.items() if key != "$ref"}}
    return schema


def _properties(schema) -> dict:
    """`properties`, merged from top-level `anyOf`/`oneOf`/`allOf` branches too."""
    if not isinstance(schema, dict):
        return {}
    merged = dict(schema.get("properties") or {})
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or ():
            merged.update(_properties(branch))
    return merged


def schema_types(schema) -> Types:
    """The JSON types a schema allows; empty when it does not say."""
    if not isinstance(schema, dict):
        return Types()
    declared = schema.get("type")
    types = {_standard_type(name) for name in ([declared] if isinstance(declared, str) else declared or ())}
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            types |= schema_types(branch)
    if "enum" in schema:
        types |= {_JSON_TYPES[type(value)] for value in schema["enum"] if type(value) in _JSON_TYPES}
    if "const" in schema and type(schema["const"]) in _JSON_TYPES:
        types.add(_JSON_TYPES[type(schema["const"])])
    if not types and "properties" in schema:
        types.add("object")
    if not types and "items" in schema:
        types.add("array")
    return Types(types)


_TYPE_PREFIXES = (
    (("int", "uint", "long", "short", "unsigned"), "integer"),
    (("num", "float", "double", "decimal"), "number"),
    (("bool",), "boolean"),
    (("str", "text", "varchar", "char"), "string"),
    (("dict", "map"), "object"),
    (("list", "arr", "tuple", "set"), "array"),
)


def _standard_type(name) -> str:
    """A JSON schema type for the loose names tool schemas often use
    (`int`, `uint32`, `float`, `bool`, `str`, `dict`, `List[str]`, `tuple`)."""
    if not isinstance(name, str) or name in _JSON_TYPES.values():
        return name
    lowered = name.lower()
    for prefixes, standard in _TYPE_PREFIXES:
        if lowered.startswith(prefixes):
            return standard
    return name


def is_plain_string(types: Types) -> bool:
    """A value that can only be a string: safe to stream as it arrives."""
    return types == {"string"}


def to_json(raw: str, types: Types) -> str:
    """JSON text for a raw value of a parameter allowing `types`. A `null`
    written for a parameter that cannot be a string is null, whatever else
    the schema says: the model means "no value"."""
    text = raw.strip()
    if "string" not in types and _null(text, types):
        return "null"
    for kind in ("null", "boolean", "integer", "number", "container"):
        if kind == "container":
            wanted = types & {"object", "array"}
        else:
            wanted = types & {kind}
        if wanted:
            value = _READERS[kind](text, wanted)
            if value is not None:
                return value
    return orjson.dumps(raw).decode()


def _null(text: str, _wanted) -> str | None:
    return "null" if text.lower() in ("null", "none", "nil") else None


def _boolean(text: str, _wanted) -> str | None:
    lowered = text.lower()
    return lowered if lowered in ("true", "false") else None


def _integer(text: str, _wanted) -> str | None:
    return text if _INTEGER.fullmatch(text) else None


def _number(text: str, _wanted) -> str | None:
    if _NUMBER.fullmatch(text):
        return text
    try:
        value = float(text)
    except ValueError:
        return None
    return orjson.dumps(value).decode() if value == value and abs(value) != float("inf") else None


def _container(text: str, wanted) -> str | None:
    """JSON (stdlib, so big integers keep every digit), else a Python
    literal, else JSON the model wrote with its quotes escaped (`[{\\"a\\": 1}]`)."""
    value = _json(text)
    if value is None:
        value = _python_literal(text)
    if value is None and '\\"' in text:
        value = _json(_json('"' + text + '"') or "")
    if isinstance(value, tuple):
        value = list(value)
    if _JSON_TYPES.get(type(value)) not in wanted:
        return None
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _json(text: str):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _python_literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


_READERS = {"null": _null, "boolean": _boolean, "integer": _integer, "number": _number, "container": _container}
