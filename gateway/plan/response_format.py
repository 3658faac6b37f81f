"""A client's JSON `response_format` (`json_schema`, `json_object`) for a
reply that may open with reasoning: sent as the backend dialect's
constraint behind the reasoning block (reasoning_first.py), since a
raw-text backend would hold the model to the JSON from its first token and
leave it no room to think (docs/api.md, "Reasoning under a constraint").

Left as the client sent it: a reply with no reasoning to wait for, a
dialect that does not rewrite it (`llamacpp`, `none`), a `response_format`
of another type or shape (the backend answers for it), and a request that
also carries another constraint field of the dialect's.
"""

from __future__ import annotations

from gateway.ops.config import ModelConfig
from gateway.plan.constraints import DIALECTS
from gateway.plan.reasoning_first import ReasoningBlock

ANY_OBJECT = {"type": "object"}  # what `json_object` asks for: one JSON object


def response_format_upstream(payload: dict, model: ModelConfig, reasoning: ReasoningBlock | None) -> dict:
    """The request fields that carry the client's JSON `response_format`
    behind `reasoning`; None for a field means it is not sent. Empty when
    the request goes as sent (module docstring)."""
    dialect = DIALECTS.get(model.guided_decoding or "none")
    schema = json_schema_of(payload.get("response_format"))
    if reasoning is None or dialect is None or not dialect.rewrites_response_format or schema is None:
        return {}
    if any(key in payload for key in dialect.constraint_fields if key != "response_format"):
        return {}
    return {"response_format": None, **dialect.after_reasoning(schema, reasoning)}


def json_schema_of(response_format: object) -> dict | None:
    """The JSON schema a `response_format` asks for (`{}`: any JSON), or
    None when it asks for none or is not one parsegate reads."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_object":
        return ANY_OBJECT
    spec = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(spec, dict):
        return None
    schema = spec.get("schema", {})
    return schema if isinstance(schema, dict) else None
