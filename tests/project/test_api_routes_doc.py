"""docs/api.md's route list names every route the gateway serves."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.ops.config import Config

API_DOC = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")


def served_routes() -> list[str]:
    """The routes of the gateway's own OpenAPI description."""
    config = Config.model_validate(
        {"models": [{"name": "demo", "backend": {"demo": True}}], "store": {"backend": "none"}}
    )
    with TestClient(create_app(config)) as client:
        paths = client.get("/openapi.json").json()["paths"]
    return sorted(f"{method.upper()} {path}" for path, operations in paths.items() for method in operations)


def test_the_route_list_names_every_route():
    routes = served_routes()
    assert {"POST /v1/responses", "POST /v1/messages", "POST /v1/messages/count_tokens"} <= set(routes)
    listed = API_DOC.split("## Routes", 1)[1].split("\n## ", 1)[0]
    assert [route for route in routes if f"- `{route}`" not in listed] == []
