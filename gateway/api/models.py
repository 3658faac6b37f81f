"""`GET /v1/models`: the configured models, each with the parsers it is
served with; a catch-all entry adds what its backend lists."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from gateway.ops.config import ModelConfig
from gateway.ops.json_body import json_response
from gateway.upstream.derived_parsers import known_template_parsers
from gateway.upstream.serving import served_models


async def list_models(request: Request) -> Response:
    """The configured models; a catch-all entry adds what its backend lists."""
    served = await served_models(request.app.state.backends)
    created = request.app.state.created
    data = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "parsegate-demo" if backend.config.backend.demo else "parsegate",
            "parsers": served_parsers(
                known_template_parsers(backend) if name == backend.config.name else backend.config.routed(name)
            ),
        }
        for name, backend in served
    ]
    return json_response({"object": "list", "data": data})


def served_parsers(model: ModelConfig) -> dict:
    """A model's parsers as GET /v1/models lists them: each stage's name
    (`derived` for a format derived from the template) and where they come
    from (docs/derived-parsers.md)."""
    stages = {"reasoning_parser": model.reasoning_stage, "tool_call_parser": model.tool_stage}
    named = {key: stage if isinstance(stage, str | None) else stage.name for key, stage in stages.items()}
    origin = "response_template" if model.response_template is not None else model.parsers_origin
    return {**named, "origin": origin}
