"""History items of tools the gateway does not run, as text the model
reads (docs/agents.md: history items of tools the gateway does not run).

A history replayed from OpenAI's hosted tools, or from a newer Codex,
holds items of tools OpenAI or the client ran for the model (hosted
tools, shell and patch tools, MCP, tool search): each is a line of the
assistant's turn, `[TYPE] {fields}`, so a session moved from OpenAI to a
local model keeps what happened.
"""

from __future__ import annotations

import re

import orjson

REPLAYED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "tool_search_call",
        "tool_search_output",
        "program",
        "program_output",
    }
)
_NOT_REPLAYED = ("id", "type", "status")
_REPLAYED_TEXT_CHARS = 1000  # a longer string that is an image (data: URL, base64 result) is named, not replayed
_IMAGE_TEXT = re.compile(r"(data:[\w/+.-]+;base64,)?[A-Za-z0-9+/=_-]+")


def replayed(kind: str, item: dict) -> str:
    """A hosted tool's history item as the text the model reads."""
    fields = {key: _without_images(value) for key, value in item.items() if key not in _NOT_REPLAYED}
    return f"[{kind}] {orjson.dumps(fields).decode()}"


def _without_images(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_images(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_without_images(inner) for inner in value]
    if isinstance(value, str) and len(value) > _REPLAYED_TEXT_CHARS and _IMAGE_TEXT.fullmatch(value):
        return f"(an image or file of {len(value)} characters, not replayed)"
    return value
