"""The GBNF grammars parsegate makes from JSON schemas (gateway.plan.gbnf),
run by a real llama-server: its random model, sampling freely under each
grammar with several seeds, must write JSON that the schema accepts, every
time. jsonschema-rs is the judge.

llama.cpp's grammar engine reads code points but does not check UTF-8
continuation bytes (any byte with the right low six bits passes, even
for a literal), so the byte-level model can write malformed UTF-8 that the
server returns as U+FFFD. The model is kept to ASCII bytes here; forced
non-ASCII text is tested with one-literal grammars elsewhere."""

from __future__ import annotations

import json

import httpx
import jsonschema_rs
import pytest

from gateway.plan.constraints import call_array_schema
from gateway.plan.gbnf import schema_grammar
from tests.e2e.tiny_gguf import byte_token_id

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
                "days": {"type": "integer"},
                "unit": {"enum": ["celsius", "fahrenheit", 'say "hi"\n']},
            },
            "required": ["city"],
        },
    },
}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}

SCHEMAS = {
    "call array, any tool": call_array_schema([WEATHER, CLOCK], None, True),
    "call array, named, one call": call_array_schema([WEATHER, CLOCK], "get_weather", False),
    "optional members only": {
        "type": "object",
        "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"const": "Zurich"}},
    },
    "nullable and loose type names": {
        "type": "object",
        "properties": {"n": {"type": ["number", "null"]}, "i": {"type": "int"}, "s": {"type": "str", "maxLength": 3}},
        "required": ["n", "i", "s"],
        "additionalProperties": False,
    },
    "additional properties by schema": {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "additionalProperties": {"type": "boolean"},
    },
    "arrays with bounds and tuples": {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False},
            "few": {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 2, "maxItems": 4},
            "none": {"type": "array", "maxItems": 0},
        },
        "required": ["pair", "few", "none"],
    },
    "anyOf branches sharing a type": {
        "type": "object",
        "anyOf": [
            {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
            {"properties": {"kind": {"const": "b"}}, "required": ["kind"], "additionalProperties": False},
        ],
    },
    "allOf merged": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
        ]
    },
    "recursive $defs": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
                },
                "required": ["v"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
    "strings with lengths": {
        "type": "array",
        "items": {"type": "string", "minLength": 2, "maxLength": 5},
        "minItems": 1,
        "maxItems": 3,
    },
}
# The loose type names, as JSON Schema spells them, for the judge.
JUDGED_AS = {
    "nullable and loose type names": {
        **SCHEMAS["nullable and loose type names"],
        "properties": {
            "n": {"type": ["number", "null"]},
            "i": {"type": "integer"},
            "s": {"type": "string", "maxLength": 3},
        },
    }
}
SEEDS = range(6)
ASCII_ONLY = [[byte_token_id(byte), False] for byte in range(0x80, 0x100)]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_model_writes_only_json_the_schema_accepts(llama: httpx.Client, name: str) -> None:
    schema = SCHEMAS[name]
    grammar = schema_grammar(schema)
    validator = jsonschema_rs.validator_for(JUDGED_AS.get(name, schema))
    for seed in SEEDS:
        response = llama.post(
            "/v1/completions",
            json={
                "prompt": "JSON:",
                "grammar": grammar,
                "max_tokens": 3000,
                "seed": seed,
                "temperature": 1.0,
                "logit_bias": ASCII_ONLY,
            },
        )
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        assert choice["finish_reason"] == "stop", f"seed {seed}: {choice['text'][:200]!r}"
        value = json.loads(choice["text"])
        errors = [error.message for error in validator.iter_errors(value)]
        assert errors == [], f"seed {seed}: {choice['text']!r}"
