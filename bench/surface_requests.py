"""The requests the gateway benchmarks send: the same question with one tool,
as each surface spells it, to parsegate on bench/gateway.yaml in front of
bench/fake_backend.py."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PARSEGATE_SHARED_BENCH", REPO.parent / "shared" / "bench"))  # load.py
CHUNKS = 200  # backend chunks of 4 characters per response
QUESTION = "What is the weather in Paris?"
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}
BODIES = {
    "chat": {
        "model": "fake",
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}],
    },
    "messages": {
        "model": "fake",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [{"name": "get_weather", "input_schema": PARAMETERS}],
    },
    "responses": {
        "model": "fake",
        "input": QUESTION,
        "tools": [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}],
    },
}
SURFACES = tuple(BODIES)  # what surface_bench.py loads
# template mode: the chat request to the model whose prompt the gateway renders (the instruction counts)
BODIES["template"] = {**BODIES["chat"], "model": "fake-template"}
PATHS = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "template": "/v1/chat/completions",
}
END = {
    "chat": "[DONE]",
    "responses": "response.completed",
    "messages": "message_stop",
    "template": "[DONE]",
}  # each stream's last event
