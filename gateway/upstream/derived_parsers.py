"""Config entries served by the parsers their chat template implies
(docs/derived-parsers.md): `parsers_from: SOURCE`, or in template mode a
`chat_template` with no parser named. Each template file is read and
analysed once, at start-up and at each reload (`analysis.derive`);
the server's own template (`backend`, llama.cpp's `GET /props`) at the
first chat request, as template mode reads it, and kept once answered;
a server that cannot say is not asked again for a few seconds (asked_once.py).
Each analysis runs in a process of its own within the model's
`render_timeout` (`derivation_process.py`), off the event loop.
"""

from __future__ import annotations

import logging

import anyio

from gateway.ops.config import CHAT_TEMPLATE_FROM_BACKEND, Config, ConfigError, ModelConfig
from gateway.ops.errors import ApiError
from gateway.ops.request_bounds import MAX_PROMPT_CHARS, RENDER_TIMEOUT
from gateway.templates.chat_template import ChatTemplateError
from gateway.templates.derivation import Derivation
from gateway.templates.derivation_process import compile_within, derive_within
from gateway.templates.render_pool import render_memory_bytes
from gateway.templates.sources import load_chat_template
from gateway.upstream.backend import Backend
from gateway.upstream.template_backend import PROPS_PATH, props_template

logger = logging.getLogger("parsegate.startup")
FROM_SERVER = "template: the server's, read at the first request"


def with_template_parsers(config: Config) -> Config:
    """`config` with each entry that takes its parsers from a template
    served by them; entries sharing a template file share its analysis."""
    analysed: dict[tuple, Derivation] = {}
    models = [_derived(model, analysed) for model in config.models]
    return config if models == config.models else config.model_copy(update={"models": models})


def derivation_of(source: str, model: ModelConfig | None = None) -> Derivation:
    """What the template at `source` implies, within the model's
    `render_timeout`; ConfigError if it cannot be read or does not compile
    (in a worker, within the same bounds: ChatTemplate.compile)."""
    where = f"models[{model.name!r}].parsers_from" if model else "template"
    seconds = model.render_timeout if model else RENDER_TIMEOUT
    try:
        template = load_chat_template(
            source,
            bos_token=model.bos_token if model else None,
            eos_token=model.eos_token if model else None,
            compile_now=False,
        )
        compile_within(template, seconds, render_memory_bytes(model.max_prompt_chars if model else MAX_PROMPT_CHARS))
    except ChatTemplateError as error:
        raise ConfigError(f"{where}: {error}") from None
    return derive_within(template, seconds)


def _derived(model: ModelConfig, analysed: dict[tuple, Derivation]) -> ModelConfig:
    source = model.template_for_parsers
    if source is None:
        return model
    if source == CHAT_TEMPLATE_FROM_BACKEND:
        return model.with_template_parsers(None, None, FROM_SERVER)
    key = (source, model.bos_token, model.eos_token, model.render_timeout)
    if key not in analysed:
        analysed[key] = derivation_of(source, model)
    found = analysed[key]
    _warn_if_plain(model.name, found, source)
    return _served(model, found)


async def with_server_template_parsers(backend: Backend, model: ModelConfig) -> ModelConfig:
    """`model`, an entry of `backend`'s that takes its parsers from the
    server's template (`parsers_origin` FROM_SERVER), served by the parsers
    that template implies; itself while the server cannot say (asked again,
    and warned of again, once the few seconds its failure is kept are over:
    asked_once.py)."""
    found = await backend.template_parsers.get(lambda: _ask_server(backend))
    return model if found is None else _served(model, found)


def known_template_parsers(backend: Backend) -> ModelConfig:
    """The entry `backend` serves, with the parsers its server's template
    implies once a request has derived them (GET /v1/models); as
    configured until then."""
    found = backend.template_parsers.known() if backend.config.parsers_origin == FROM_SERVER else None
    return backend.config if found is None else _served(backend.config, found)


async def _ask_server(backend: Backend) -> Derivation | None:
    try:
        template = props_template(await backend.fetch(PROPS_PATH, at_root=True), backend.config, PROPS_PATH)
    except (ApiError, ChatTemplateError) as error:
        logger.warning("model %s: no parsers from the server's chat template for now: %s", backend.name, error)
        return None
    found = await anyio.to_thread.run_sync(derive_within, template, backend.config.render_timeout)
    _warn_if_plain(backend.name, found, f"of the server ({PROPS_PATH})")
    return found


def _served(model: ModelConfig, found: Derivation) -> ModelConfig:
    origin = "template: derived" if found.found_nothing else found.origin
    return model.with_template_parsers(found.reasoning_stage(), found.tool_stage(), origin)


def _warn_if_plain(name: str, found: Derivation, source: str) -> None:
    if found.found_nothing:
        logger.warning(
            "model %s: the chat template %s writes no reasoning and no tool-call markers parsegate can read (%s); "
            "served as plain content",
            name,
            source,
            "; ".join(found.refusals),
        )
