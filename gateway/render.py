"""`parsegate render`: the prompt a chat request renders to, for offline
debugging of template mode, from a template source or as a configured
model entry would render it (its extra_body and thinking switch applied,
its template from its file or, with `chat_template: backend`, from the
server's `GET /props`, asked as the gateway asks it: with the backend's
key, URLs and deadlines)."""

from __future__ import annotations

import anyio
import orjson

from gateway.ops.config import ConfigError, ModelConfig, load_config
from gateway.ops.errors import ApiError
from gateway.plan.request_fields import with_extra_body, with_thinking_switch
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from gateway.templates.prompt_render import render_prompt
from gateway.templates.sources import load_chat_template
from gateway.upstream.template_backend import TemplateBackend, check_template_kwargs, model_template


class RenderError(Exception):
    """Why a prompt could not be rendered, in one line."""


def render_request(
    request: bytes,
    *,
    path: str | None = None,
    bos_token: str | None = None,
    eos_token: str | None = None,
    config: str | None = None,
    model: str | None = None,
) -> str:
    """The prompt for a chat-completions request body, from the template at
    `path`, or as model `model` of the config at `config` renders it."""
    payload = _request(request)
    try:
        if config is not None and model is not None:
            entry = _entry(config, model)
            payload = with_extra_body(with_thinking_switch(payload, entry.reasoning_stage), entry.extra_body)
            template = model_template(entry) or _server_template(entry)
        else:
            template = load_chat_template(str(path), bos_token=bos_token, eos_token=eos_token)
        check_template_kwargs(payload)
        return render_prompt(template, payload)
    except (ChatTemplateError, ConfigError, ApiError) as error:
        raise RenderError(str(error)) from None


def _request(raw: bytes) -> dict:
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise RenderError(f"the request on stdin is not JSON: {error}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        raise RenderError("the request on stdin must be a JSON object with a 'messages' list")
    return payload


def _entry(config: str, model: str) -> ModelConfig:
    entries = {entry.name: entry for entry in load_config(config).models}
    if model not in entries:
        raise RenderError(f"{config}: no model entry named {model!r}; entries: {', '.join(entries)}")
    entry = entries[model]
    if entry.chat_template is None:
        raise RenderError(f"{config}: model {model!r} has no chat_template (it is served in chat mode)")
    return entry


def _server_template(entry: ModelConfig) -> ChatTemplate:
    """The template the entry's server reports at `GET /props`."""

    async def ask() -> ChatTemplate:
        backend = TemplateBackend(entry)
        try:
            return await backend.template()
        finally:
            await backend.client.aclose()

    try:
        return anyio.run(ask)
    except ApiError as error:
        raise RenderError(str(error)) from None
